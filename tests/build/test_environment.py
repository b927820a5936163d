"""The conda environment.yml lists the same packages as pyproject.toml, and the lock pins torch."""
import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
CONDA_NAMES = {"torch": "pytorch"}          # PyPI name -> conda-forge name, where they differ
CONDA_ONLY = {"python", "pip", "nodejs"}    # environment.yml needs these; pyproject cannot list them


def name_of(requirement: str) -> str:
    return re.split(r"[<>=!~ \[;]", requirement.strip(), maxsplit=1)[0].lower()


def pyproject_names() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for extra in ("book", "dev", "instructor"):
        reqs += project["optional-dependencies"][extra]
    return {CONDA_NAMES.get(name_of(r), name_of(r)) for r in reqs}


def environment_names() -> set[str]:
    deps = yaml.safe_load((ROOT / "environment.yml").read_text())["dependencies"]
    names = set()
    for dep in deps:
        for item in (dep["pip"] if isinstance(dep, dict) else [dep]):
            names.add(name_of(item))
    return names - CONDA_ONLY


def test_environment_yml_matches_pyproject():
    ours, conda = pyproject_names(), environment_names()
    assert ours - conda == set(), f"in pyproject.toml but not environment.yml: {sorted(ours - conda)}"
    assert conda - ours == set(), f"in environment.yml but not pyproject.toml: {sorted(conda - ours)}"


def test_lock_pins_torch_and_jupyter_book_1():
    lock = (ROOT / "requirements" / "lock.txt").read_text().splitlines()
    assert "torch==2.13.0" in lock
    jb = [line for line in lock if line.startswith("jupyter-book==")]
    assert jb and jb[0].split("==")[1].startswith("1."), jb
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "jupyter-book>=1.0.4.post1,<2" in project["optional-dependencies"]["book"]
