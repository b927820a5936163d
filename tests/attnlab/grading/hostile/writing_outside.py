"""Writing outside: the checkout's attnlab, the venv, a .pth file, a classmate's notebook, the gradebook.

Every write that would change a later grading run, or a classmate's row, or this gradebook;
each path both as the sandbox sees it and as given below (the real paths of this machine).
"""
import glob
import os
import pathlib
import site
import sys

import attnlab

_payload = "\nimport pathlib; pathlib.Path('@PROOF@', 'payload-ran').write_text('ran')\n"
_targets = [pathlib.Path(attnlab.__file__), pathlib.Path(attnlab.__file__).parent / "checks" / "__init__.py",
            pathlib.Path("@ROOT@", "attnlab", "__init__.py"), pathlib.Path("@ROOT@", "Makefile")]
for _target in _targets:
    try:
        with open(_target, "a") as _f:
            _f.write(_payload)
    except OSError:
        pass
for _folder in [*site.getsitepackages(), *glob.glob("@VENV@/lib/python3*/site-packages"), sys.prefix]:
    try:
        pathlib.Path(_folder, "zz-hostile.pth").write_text("import os" + _payload.replace("\n", ";"))
    except OSError:
        pass
for _notebook in glob.glob("@SUBMISSIONS@/*.ipynb") + glob.glob("../*.ipynb"):
    try:
        pathlib.Path(_notebook).write_text("{}")
    except OSError:
        pass
for _name in ("gradebook.csv", "feedback/honest.md"):
    try:
        pathlib.Path("@SUBMISSIONS@", _name).write_text("student,total\nhostile,100\n")
    except OSError:
        pass
try:
    pathlib.Path("@PROOF@", "wrote-outside").write_text("yes")
except OSError:
    pass
os.sync()
