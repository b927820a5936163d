"""Running cells as the browser does, under CPython: in a fresh process, with torch and the rest of
attnlab.live_cells.UNAVAILABLE replaced by attnlab.live's stand-ins."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = """
import json, os, sys
os.environ["MPLBACKEND"] = "agg"
from attnlab import live
live.install_browser_modules()              # torch missing, as in the browser
page = live.Page()
print(json.dumps([page.run_cell(cell) for cell in json.loads(sys.stdin.read())]))
"""


def run_without_torch(cells: list[str], timeout: float = 600) -> list[list[dict]]:
    """The outputs of each cell, run in order in one page."""
    done = subprocess.run([sys.executable, "-c", SCRIPT], input=json.dumps(cells), capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])
