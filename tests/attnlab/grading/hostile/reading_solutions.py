"""Reading solutions: the solution pages next to attnlab, and a classmate's notebook, executed.

Looks for the checkout (from attnlab's own path, and at the path given below), reads the
solution page and any submitted notebook it can find, and executes their code to define the
functions: in the old sandbox this earned full marks.
"""
import glob
import json
import os
import pathlib

import attnlab

_places = [pathlib.Path(attnlab.__file__).resolve().parents[1], pathlib.Path("@ROOT@"), pathlib.Path("@SUBMISSIONS@"),
           pathlib.Path.cwd().parent, pathlib.Path("/")]
_found = []
for _place in _places:
    for _pattern in ("solutions/sol01_*.md", "*.ipynb", "**/sol01_qkv.md"):
        try:
            _found += glob.glob(str(_place / _pattern), recursive=_place != pathlib.Path("/"))
        except OSError:
            pass
for _path in _found:
    try:
        _text = pathlib.Path(_path).read_text()
        pathlib.Path("@PROOF@", "read-" + os.path.basename(_path)).write_text(_text[:100])
    except OSError:
        continue
    if _path.endswith(".ipynb"):
        try:
            for _cell in json.loads(_text)["cells"]:
                if _cell["cell_type"] == "code" and "grader" not in "".join(_cell["source"]):
                    exec("".join(_cell["source"]), globals())
        except Exception:
            pass
