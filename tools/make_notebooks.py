"""Write .ipynb copies of the chapters and exercises into notebooks/ (``make notebooks``).

The book's pages are MyST Markdown notebooks; jupytext reads them. Plain Jupyter does not render
MyST directives and roles, so each markdown cell is lightly translated: cross-reference roles become
their text, labels are dropped, exercise boxes become headings, dropdowns become <details> and
numbered equations become $$ blocks. Code cells are unchanged. Solutions are not written unless
``--solutions`` is given (for instructors).

    python tools/make_notebooks.py [--solutions] [--out notebooks]
"""
from __future__ import annotations

import argparse
import pathlib
import re

import jupytext
import nbformat

ROOT = pathlib.Path(__file__).resolve().parents[1]

CHAPTER_NAMES = {
    "ch-qkv": "chapter 1", "ch-scaling": "chapter 2", "ch-masks": "chapter 3", "ch-worked": "chapter 4",
    "ch-backprop": "chapter 5", "ch-multihead": "chapter 6", "ch-cost": "chapter 7",
    "ch-structure": "chapter 8", "ch-pretrained": "chapter 9", "notation": "the notation page",
    "glossary": "the glossary",
}


def _role(match: re.Match) -> str:
    role, body = match.group(1), match.group(2)
    titled = re.fullmatch(r"(.*?)\s*<([^>]+)>", body, flags=re.S)
    if titled:
        return titled.group(1)
    if role in ("ref", "doc"):
        label = body.strip("/").split("/")[-1]
        if label in CHAPTER_NAMES:
            return CHAPTER_NAMES[label]
        if label.startswith("ex-") and "ch-" + label[3:] in CHAPTER_NAMES:
            return "the exercises of " + CHAPTER_NAMES["ch-" + label[3:]]
        return label
    if role == "eq":
        return "(the equation above)"
    if role == "numref":
        return "the figure"
    if role.startswith("glue"):
        return f"`{body.split(':')[0]}`"
    return body


_DIRECTIVE = re.compile(
    r"^(?P<indent>[ \t]*)(?P<fence>:{3,}|`{3,})\{(?P<name>[\w:-]+)\}[ \t]*(?P<arg>.*)\n"
    r"(?P<opts>(?:[ \t]*:[\w-]+:.*\n)*)(?P<body>(?:.|\n)*?)^(?P=indent)(?P=fence)[ \t]*$", re.M)

_TITLES = {"prf:lemma": "Lemma", "prf:proposition": "Proposition", "prf:theorem": "Theorem",
           "prf:definition": "Definition", "prf:corollary": "Corollary", "prf:example": "Example",
           "prf:algorithm": "Algorithm", "note": "Note", "tip": "Tip", "warning": "Warning",
           "important": "Important", "admonition": "", "hint": "Hint", "caution": "Caution"}


def _source_of(path: pathlib.Path, pyobject: str | None) -> str:
    text = path.read_text()
    if not pyobject:
        return text
    import ast
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == pyobject.split(".")[-1]:
            return ast.get_source_segment(text, node)
    return text


def _directive(match: re.Match, base: pathlib.Path | None) -> str:
    indent, name, arg = match.group("indent"), match.group("name"), match.group("arg").strip()
    opts = dict(re.findall(r":([\w-]+):[ \t]*(.*)", match.group("opts")))
    body = match.group("body").rstrip()
    if name in ("exercise", "solution"):
        return f"{indent}### {name.capitalize()}: {arg}\n\n{body}\n"
    if name == "dropdown":
        return f"{indent}<details><summary>{arg}</summary>\n\n{body}\n\n{indent}</details>"
    if name == "math":
        return f"{indent}$$\n{body.strip()}\n{indent}$$"
    if name == "prf:proof":
        return f"{indent}*Proof.* {body.strip()} $\\square$"
    if name == "literalinclude":
        path = (base / arg) if base is not None else None
        code = _source_of(path, opts.get("pyobject")) if path is not None and path.exists() else f"# {arg}"
        return f"{indent}```python\n{code}\n{indent}```"
    if name in ("code-block", "code"):
        return f"{indent}```{arg}\n{body}\n{indent}```"
    title = _TITLES.get(name, name.split(":")[-1].capitalize())
    head = f"**{title}{' (' + arg + ')' if arg and title else arg}.**"
    return f"{indent}{head} {body.strip()}"


def jupyter_markdown(text: str, keep_solution_links: bool = False, base: pathlib.Path | None = None) -> str:
    """Translate the MyST of one markdown cell into what plain Jupyter renders.

    ``base`` is the page's folder, used to resolve ``literalinclude`` paths.
    """
    if not keep_solution_links:
        text = re.sub(r"^\{ref\}`[^`]*<sol-[^>]+>`\s*$\n?", "", text, flags=re.M)
        text = re.sub(r"Worked solutions: \{ref\}`[^`]+`\.?", "", text)
    text = re.sub(r"^\(([\w-]+)\)=\s*$\n?", "", text, flags=re.M)                       # targets
    text = re.sub(r":::\{(exercise|solution)-start\}\s*(.*)\n(?::[\w-]+:.*\n)*:::\s*",
                  lambda m: f"### {m.group(1).capitalize()}: {m.group(2)}\n\n" if m.group(2) else "", text)
    text = re.sub(r":::\{(exercise|solution)-end\}\s*\n:::\s*\n?", "", text)
    for _ in range(5):                                       # nested directives, outermost first
        text, n = _DIRECTIVE.subn(lambda m: _directive(m, base), text)
        if not n:
            break
    text = re.sub(r"\{([\w:-]+)\}`([^`]+)`", _role, text)
    return text.strip() + "\n"


def to_notebook(path: pathlib.Path, keep_solution_links: bool = False) -> nbformat.NotebookNode:
    nb = jupytext.read(path, fmt="md:myst")
    cells = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = jupyter_markdown(cell.source, keep_solution_links, path.parent).rstrip("\n")
            if not cell.source.strip():
                continue
        cells.append(cell)
    nb.cells = cells
    nb.metadata.pop("jupytext", None)
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    return nb


def main(argv=None) -> list[pathlib.Path]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "notebooks"), help="output folder (default: notebooks/)")
    parser.add_argument("--solutions", action="store_true", help="also write the solution pages (instructors)")
    args = parser.parse_args(argv)
    out = pathlib.Path(args.out)
    folders = ["chapters", "exercises"] + (["solutions"] if args.solutions else [])
    written = []
    for folder in folders:
        for page in sorted((ROOT / folder).glob("*.md")):
            target = out / folder / (page.stem + ".ipynb")
            target.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(to_notebook(page, keep_solution_links=False), target)
            written.append(target)
    print(f"wrote {len(written)} notebooks under {out}")
    return written


if __name__ == "__main__":
    main()
