"""A class of hostile notebooks beside an honest classmate, and a snapshot to prove nothing changed.

Each file of ``hostile/`` is one class of attack (its docstring says which): its code becomes cells
(split at ``# %%``) inserted into the blank student notebook of chapter 1 after the imports.
Where it defines a name that a stub or a placeholder cell would define again (``scores``,
``answer_shapes``), that cell is left out, so the attack's definition is the one checked. Its
placeholders name the real places of this machine, to give each attack every chance: ``@ROOT@``
the checkout, ``@VENV@`` its virtual environment, ``@SUBMISSIONS@`` the submissions folder,
``@PROOF@`` a world-writable folder where an attack that got out leaves a file, ``@PORT@`` a port
on which the test listens on the grading machine's loopback.
"""
from __future__ import annotations

import hashlib
import os
import pathlib
import re

import nbformat

HOSTILE = pathlib.Path(__file__).with_name("hostile")


def attacks() -> dict[str, list[str]]:
    """{attack: its cells}, placeholders not yet filled."""
    out = {}
    for path in sorted(HOSTILE.glob("*.py")):
        cells = [c.strip() + "\n" for c in re.split(r"^# %%\n", path.read_text(), flags=re.M)]
        out[path.stem.replace("_", "-")] = cells
    return out


def _defined(source: str) -> set[str]:
    return set(re.findall(r"^def (\w+)\(", source, re.M)) | set(re.findall(r"^(\w+)\s*=", source, re.M))


def hostile_notebook(student, cells: list[str]):
    notebook = nbformat.from_dict(student)
    defined = set().union(*map(_defined, cells))
    for cell in notebook.cells:
        redefines = cell.cell_type == "code" and _defined(cell.source) & defined
        if redefines and ("NotImplementedError" in cell.source or re.search(r"=\s*\.\.\.", cell.source)):
            cell.source = "# left as the attack defined it"
    imports = next(i for i, c in enumerate(notebook.cells) if c.cell_type == "code" and "import attnlab" in c.source)
    notebook.cells[imports + 1:imports + 1] = [nbformat.v4.new_code_cell(c) for c in cells]
    return notebook


def write_class(assignment: pathlib.Path, folder: pathlib.Path, places: dict[str, str]) -> list[str]:
    """Write honest.ipynb (the solved notebook), blank.ipynb and hostile-<attack>.ipynb into ``folder``."""
    stem = assignment.name
    solved = nbformat.read(assignment / "autograder" / f"{stem}.ipynb", as_version=4)
    student = nbformat.read(assignment / "student" / f"{stem}.ipynb", as_version=4)
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(solved, folder / "honest.ipynb")
    nbformat.write(student, folder / "blank.ipynb")
    names = ["honest", "blank"]
    for attack, cells in attacks().items():
        filled = []
        for cell in cells:
            for key, value in places.items():
                cell = cell.replace(f"@{key}@", value)
            filled.append(cell)
        nbformat.write(hostile_notebook(student, filled), folder / f"hostile-{attack}.ipynb")
        names.append(f"hostile-{attack}")
    return names


def snapshot(root: pathlib.Path, skip=(), contents: bool = True) -> dict[str, tuple]:
    """{path: (mode, size, mtime, ctime, sha256)} of everything under ``root`` (links not followed),
    except the top-level names in ``skip``. Any write to a file changes its ctime, which no process
    can set back, and a new or removed file changes the entries; with ``contents``, files of at most
    1 MiB are hashed too (the checkout, the submissions; the 60 000 files of a venv are not)."""
    out = {}
    for folder, dirs, files in os.walk(root):
        here = pathlib.Path(folder)
        if here == root:
            dirs[:] = [d for d in dirs if d not in skip]
            files = [f for f in files if f not in skip]
        for name in [*files, *dirs]:
            path = here / name
            info = path.lstat()
            digest = ""
            if contents and path.is_file() and not path.is_symlink() and info.st_size <= 1 << 20:
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
            out[str(path.relative_to(root))] = (info.st_mode, info.st_size, info.st_mtime_ns, info.st_ctime_ns, digest)
    return out


def changes(before: dict, after: dict) -> list[str]:
    return sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
