"""The guide's commands, run once per session in a temporary copy of the repository.

``instructors.md`` promises that every fenced ``bash`` block runs exactly as printed. The
``guide`` fixture copies the working tree (tracked and untracked, not ignored, files, with
their times, so that make sees the environment as up to date) into a temporary folder, links
this checkout's ``.venv`` into it instead of installing a second one, and runs each block
there with ``bash -e``, in order. The other grading tests reuse the assignment it builds.
"""
from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
from dataclasses import dataclass

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
GUIDE = ROOT / "instructors.md"


def shell_blocks(text: str) -> list[str]:
    return [m.group(1) for m in re.finditer(r"^```bash\n(.*?)^```", text, flags=re.M | re.S)]


@dataclass
class GuideRun:
    clone: pathlib.Path
    blocks: list[str]
    outputs: list[subprocess.CompletedProcess]


@pytest.fixture(scope="session")
def guide(tmp_path_factory) -> GuideRun:
    clone = tmp_path_factory.mktemp("guide") / "repo"
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                           capture_output=True).stdout.decode().split("\0")
    for name in filter(None, files):
        source = ROOT / name
        if source.is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, clone / name)
    (clone / ".venv").symlink_to(ROOT / ".venv")
    # the venv is shared: the clone's make must never reinstall into it (that would point the
    # editable attnlab and the python3 kernelspec at this temporary clone)
    stamp = (ROOT / ".venv" / ".installed-stamp").stat().st_mtime
    for name in ("pyproject.toml", "requirements/lock.txt"):
        os.utime(clone / name, (stamp - 1, stamp - 1))
    blocks, outputs = shell_blocks(GUIDE.read_text()), []
    for block in blocks:
        done = subprocess.run(["bash", "-e", "-c", block], cwd=clone, capture_output=True, text=True, timeout=900)
        outputs.append(done)
        assert done.returncode == 0, f"the guide's block\n{block}\nfailed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    return GuideRun(clone, blocks, outputs)


@pytest.fixture(scope="session")
def chapter1(guide) -> pathlib.Path:
    """The chapter 1 assignment, as the guide built it."""
    return guide.clone / "assignments" / "ex01_qkv"
