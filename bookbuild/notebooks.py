"""Write .ipynb copies of the chapters and exercises into notebooks/ (``make notebooks``).

The book's pages are MyST Markdown notebooks; jupytext reads them. Plain Jupyter does not render
MyST directives and roles, so each markdown cell is turned into what the book shows: a reference
becomes the title of what it names (as the book's link text is), a glued value the number or text
the edition computed (read from the edition's execution cache, which ``make notebooks`` fills
first), labels are dropped, exercise boxes become headings, dropdowns become <details> and
numbered equations become $$ blocks. Code cells are unchanged. Solutions are not written unless
``--solutions`` is given (for instructors). ``bookbuild.lint.notebooks`` checks the result.

``--lang zh_CN`` writes the Chinese notebooks into notebooks/zh_CN/: each markdown cell is first
translated through the page's catalog in locale/zh_CN (bookbuild.i18n.markdown, as the Chinese
edition is), then converted the same way, with Chinese words for what the conversion writes itself
(第 1 章, 练习, 证明 ...). A first code cell sets attnlab's messages to Chinese; the other code cells
are those of the English notebook.

    python -m bookbuild notebooks [--solutions] [--lang zh_CN] [--out notebooks]
"""
from __future__ import annotations

import argparse
import functools
import pathlib
import re

import jupytext
import nbformat

from .editions import Edition
from .execute import read_notebook
from .i18n.code_text import object_source, translate_fenced
from .i18n.code_text import translate as translate_code
from .i18n.markdown import (
    LANGUAGES,
    catalog_path,
    page_catalog,
    translate_figure_caption,
    translate_markdown,
)
from .pages import ROOT
from .reading_time import reading_time_text

# the chapters' labels in book order (chapters/NN_*.md)
CHAPTER_LABELS = ["qkv", "scaling", "masks", "worked", "backprop", "multihead", "position", "cost", "flash",
                  "structure", "pretrained", "kvcache"]
CHAPTER_NAMES = {f"ch-{label}": f"chapter {i}" for i, label in enumerate(CHAPTER_LABELS, start=1)} | {
    "notation": "the notation page", "glossary": "the glossary",
}
_TITLES = {"prf:lemma": "Lemma", "prf:proposition": "Proposition", "prf:theorem": "Theorem",
           "prf:definition": "Definition", "prf:corollary": "Corollary", "prf:example": "Example",
           "prf:algorithm": "Algorithm", "note": "Note", "tip": "Tip", "warning": "Warning",
           "important": "Important", "admonition": "", "hint": "Hint", "caution": "Caution"}
# What the conversion writes itself, per language (the page's own text comes from its catalog).
WORDS = {
    "en": {"chapters": CHAPTER_NAMES, "titles": _TITLES, "exercises of": "the exercises of {}",
           "equation": "(the equation above)", "figure": "the figure", "exercise": "Exercise",
           "solution": "Solution", "heading": "### {kind}: {title}", "proof": "*Proof.*",
           "box": "**{title} ({arg}).**", "stop": ".", "worked solutions": r"Worked solutions:\s*\{ref\}`[^`]+`\.?",
           "answer": "*Your answer:*", "language comment": "attnlab's messages", "work": "{}"},
    "zh_CN": {"chapters": {**{f"ch-{k}": f"第 {i} 章" for i, k in enumerate(CHAPTER_LABELS, start=1)},
                           "notation": "记号与约定", "glossary": "术语表"},
              "titles": {"prf:lemma": "引理", "prf:proposition": "命题", "prf:theorem": "定理",
                         "prf:definition": "定义", "prf:corollary": "推论", "prf:example": "例",
                         "prf:algorithm": "算法", "note": "注", "tip": "提示", "warning": "警告",
                         "important": "重要", "admonition": "", "hint": "提示", "caution": "注意"},
              "exercises of": "{}的练习", "equation": "（上面的公式）", "figure": "该图", "exercise": "练习",
              "solution": "解答", "heading": "### {kind}：{title}", "proof": "*证明：*",
              "box": "**{title}（{arg}）**", "stop": "",
              "worked solutions": r"(?:详细解答|完整解答|解答详见)[：:]?\s*\{ref\}`[^`]+`。?",
              "answer": "*你的答案：*", "language comment": "attnlab 的提示信息用中文",
              "work": "《{}》"},          # a page cited as a work, as _ext/zh_spacing.py quotes it in the book
}
# attnlab.i18n.set_language (the package does not export it at the top level)
SET_LANGUAGE = 'from attnlab.i18n import set_language\n\nset_language("{lang}")   # {comment}'


def words(lang: str) -> dict:
    if lang not in WORDS:
        raise ValueError(f"no notebooks in language {lang!r}; choose one of {', '.join(WORDS)}")
    return WORDS[lang]


PAGE_LABEL = re.compile(r"^(?:ch|ex|sol)-[a-z]+$")     # a chapter's or sheet's own label: cited as a work


def _role(match: re.Match, w: dict, titles: dict | None = None, glued: dict | None = None) -> str:
    role, body = match.group(1), match.group(2)
    titled = re.fullmatch(r"(.*?)\s*<([^>]+)>", body, flags=re.S)
    if titled:
        return titled.group(1)
    names = w["chapters"]
    if role in ("ref", "doc"):
        label = body.strip("/").split("/")[-1]
        if label in w.get("labels", {}):                      # "Exercise 1.6"
            return w["labels"][label]
        if titles and label in titles:
            return w["work"].format(titles[label]) if PAGE_LABEL.match(label) else titles[label]
        if label in names:
            return names[label]
        if label.startswith("ex-") and "ch-" + label[3:] in names:
            return w["exercises of"].format(names["ch-" + label[3:]])
        return label
    if role == "eq":
        return w["equation"]
    if role == "numref":
        return w["figure"]
    if role.startswith("glue"):      # without the values (a caller that gives none): the key, as code
        return _glued(role, body, glued) if glued is not None else f"`{body.split(':')[0]}`"
    return body


def _glued(role: str, body: str, glued: dict) -> str:
    """What the book shows for a glue role: the value the page glued, formatted as the role asks."""
    from myst_nb.core.variables import format_plain_text

    key, _, spec = body.partition(":") if role == "glue:text" else (body, "", "")
    data = glued.get(key.strip())
    if data is None:
        raise SystemExit(f"no glued value {key!r} in the execution cache: execute the page first (make notebooks does)")
    if role == "glue:md" and "text/markdown" in data:
        return data["text/markdown"]
    if role == "glue:math" and "text/latex" in data:
        return data["text/latex"]
    return format_plain_text(data.get("text/plain", ""), spec)


_DIRECTIVE = re.compile(
    r"^(?P<indent>[ \t]*)(?P<fence>:{3,}|`{3,})\{(?P<name>[\w:-]+)\}[ \t]*(?P<arg>.*)\n"
    r"(?P<opts>(?:[ \t]*:[\w-]+:.*\n)*)(?P<body>(?:.|\n)*?)^(?P=indent)(?P=fence)[ \t]*$", re.M)


def _kind(name: str, w: dict, numbering: list | None) -> str:
    """"Exercise 3.2" for the next exercise of sheet 3 (the book's numbering, _ext/sheet_numbers.py)."""
    if name != "exercise" or not numbering:
        return w[name]
    numbering[1] += 1
    return f"{w[name]} {numbering[0]}.{numbering[1]}"


def _directive(match: re.Match, base: pathlib.Path | None, w: dict, numbering: list | None = None) -> str:
    indent, name, arg = match.group("indent"), match.group("name"), match.group("arg").strip()
    opts = dict(re.findall(r":([\w-]+):[ \t]*(.*)", match.group("opts")))
    body = match.group("body").rstrip()
    if name in ("exercise", "solution"):
        return f"{indent}{w['heading'].format(kind=_kind(name, w, numbering), title=arg)}\n\n{body}\n"
    if name == "dropdown":
        return f"{indent}<details><summary>{arg}</summary>\n\n{body}\n\n{indent}</details>"
    if name == "math":
        return f"{indent}$$\n{body.strip()}\n{indent}$$"
    if name == "prf:proof":
        return f"{indent}{w['proof']} {body.strip()} $\\square$"
    if name == "literalinclude":
        path = (base / arg) if base is not None else None
        code = (object_source(path.read_text(), opts["pyobject"]) if opts.get("pyobject") else path.read_text()) \
            if path is not None and path.exists() else f"# {arg}"
        return f"{indent}```python\n{code}\n{indent}```"
    if name in ("code-block", "code"):
        return f"{indent}```{arg}\n{body}\n{indent}```"
    title = w["titles"].get(name, name.split(":")[-1].capitalize())
    head = w["box"].format(title=title, arg=arg) if arg and title else f"**{title or arg}{w['stop']}**"
    return f"{indent}{head} {body.strip()}"


def jupyter_markdown(text: str, keep_solution_links: bool = False, base: pathlib.Path | None = None,
                     lang: str = "en", glued: dict | None = None, numbering: list | None = None,
                     labels: dict | None = None) -> str:
    """Translate the MyST of one markdown cell into what plain Jupyter renders.

    ``base`` is the page's folder, used to resolve ``literalinclude`` paths; ``lang`` the
    language of the words the conversion writes itself and of the titles references show (the text
    is translated before, if at all); ``glued`` the values the page glued ({key: mime bundle});
    ``numbering`` ``[sheet, exercises so far]`` numbers the exercise headings as the book does;
    ``labels`` (from :func:`exercise_labels`) turns a reference to an exercise into its number.
    """
    w = {**words(lang), "labels": labels or {}}
    if not keep_solution_links:
        text = re.sub(r"^\{ref\}`[^`]*<sol-[^>]+>`\s*$\n?", "", text, flags=re.M)
        text = re.sub(w["worked solutions"], "", text)
    text = re.sub(r"^\(([\w-]+)\)=\s*$\n?", "", text, flags=re.M)                       # targets
    text = re.sub(r":::\{(exercise|solution)-start\}\s*(.*)\n(?::[\w-]+:.*\n)*:::\s*",
                  lambda m: w["heading"].format(kind=_kind(m.group(1), w, numbering), title=m.group(2)) + "\n\n"
                  if m.group(2) else "", text)
    text = re.sub(r":::\{(exercise|solution)-end\}\s*\n:::\s*\n?", "", text)
    for _ in range(5):                                       # nested directives, outermost first
        text, n = _DIRECTIVE.subn(lambda m: _directive(m, base, w, numbering), text)
        if not n:
            break
    text = re.sub(r"\{([\w:-]+)\}`([^`]+)`",
                  functools.partial(_role, w=w, titles=reference_titles(lang), glued=glued), text)
    if lang != "en":                 # no space beside 《》 (the book's zh_spacing drops them too)
        text = re.sub(r"(?<=[\u4e00-\u9fff\u3000-\u303f\uff00-\uffef]) +《", "《", text)
        text = re.sub(r"》 +(?=[\u4e00-\u9fff\u3000-\u303f\uff00-\uffef])", "》", text)
    return text.strip() + "\n"


_TARGET_TITLE = re.compile(r"^\(([\w-]+)\)=\s*\n+#+\s+(.+?)\s*$", re.M)
_DIRECTIVE_TITLE = re.compile(r"^[:`]{3,}\{[\w:-]+\}[ \t]*(.*)\n(?:[ \t]*:[\w-]+:.*\n)*?[ \t]*:label:[ \t]*([\w-]+)",
                              re.M)


@functools.lru_cache(maxsize=None)
def reference_titles(lang: str = "en") -> dict[str, str]:
    """{label: the title the book shows for a reference to it}: a section's heading, an exercise's or
    a proof's title; in ``lang`` from the pages' catalogs."""
    titles = {}
    for folder in (".", "chapters", "exercises", "solutions"):
        for page in sorted((ROOT / folder).glob("*.md")):
            if not catalog_path(page, "zh_CN").exists():        # not a page of the book (README.md)
                continue
            text = page.read_text(encoding="utf-8")
            catalog = page_catalog(page, lang) if lang != "en" else {}
            found = [*_TARGET_TITLE.findall(text), *((label, title) for title, label in _DIRECTIVE_TITLE.findall(text))]
            for label, title in found:
                if title.strip():
                    titles[label] = catalog.get(title.strip(), title.strip())
    return titles


def execution_cache(lang: str) -> pathlib.Path:
    """The execution cache of the edition in ``lang``."""
    return Edition(lang).cache


def glued_values(page: pathlib.Path, lang: str) -> dict:
    """{key: mime bundle} of what ``page`` glues, from its execution in the edition's cache (empty
    for a page that glues nothing)."""
    if "glue" not in page.read_text(encoding="utf-8"):
        return {}
    from jupyter_cache import get_cache
    from myst_nb.ext.glue import GLUE_PREFIX

    cache = get_cache(str(execution_cache(lang)))
    try:
        record = cache.match_cache_notebook(read_notebook(page))
    except KeyError:
        raise SystemExit(f"{page.relative_to(ROOT)} is not executed in {execution_cache(lang)}: "
                         "run python -m bookbuild execute (make notebooks does)") from None
    glued = {}
    for cell in cache.get_cache_bundle(record.pk).nb.cells:
        for output in cell.get("outputs", []):
            name = output.get("metadata", {}).get("scrapbook", {}).get("name")
            if name:
                glued[name] = {mime.removeprefix(GLUE_PREFIX): value for mime, value in output.get("data", {}).items()}
    return glued



def exercise_labels(folder: pathlib.Path, lang: str = "en") -> dict:
    """{"ex-qkv-tied": "Exercise 1.6", ...} for every sheet in ``folder``: the sheet's number, then
    the exercise's place on it, as _ext/sheet_numbers.py numbers them in the book."""
    found = {}
    for sheet in sorted(folder.glob("ex[0-9][0-9]_*.md")):
        number = int(sheet.name[2:4])
        blocks = re.findall(r"^:{3,}\{exercise(?:-start)?\}.*\n(?::[\w-]+:.*\n)*", sheet.read_text(), re.M)
        for place, block in enumerate(blocks, start=1):
            label = re.search(r"^:label:\s*(\S+)", block, re.M)
            if label:
                found[label.group(1)] = f"{words(lang)['exercise']} {number}.{place}"
    return found


def to_notebook(path: pathlib.Path, keep_solution_links: bool = False, lang: str = "en",
                glued: dict | None = None) -> nbformat.NotebookNode:
    """The page as a plain Jupyter notebook; for ``lang`` "zh_CN" its prose from the page's catalog;
    its glued values from ``glued``, by default from the edition's execution cache."""
    words(lang)
    catalog = page_catalog(path, lang) if lang != "en" else {}
    glued = glued_values(path, lang) if glued is None else glued
    nb = jupytext.read(path, fmt="md:myst")
    page_text = path.read_text(encoding="utf-8")
    sheet = re.match(r"ex(\d\d)_", path.name)
    numbering = [int(sheet.group(1)), 0] if sheet else None
    labels = exercise_labels(path.parent, lang) if sheet else {}
    cells = []
    for cell in _one_written_question_a_cell(nb.cells) if sheet else nb.cells:
        written = cell.cell_type == "markdown" and sheet and re.search(r"^:::\{exercise\}", cell.source, re.M)
        if cell.cell_type == "markdown":
            source = translate_markdown(cell.source, catalog)
            source = source.replace("{reading-time}`core`", reading_time_text(page_text, lang))
            cell.source = jupyter_markdown(source, keep_solution_links, path.parent, lang, glued, numbering,
                                           labels).rstrip("\n")
            cell.source = translate_fenced(cell.source, catalog.get)   # a literalinclude is a fence now
            if not cell.source.strip():
                continue
        else:
            translate_figure_caption(cell.metadata, catalog)
            cell.source = translate_code(cell.source, catalog.get)
        cells.append(cell)
        if written:              # a written question: a cell for the answer after it
            cells.append(nbformat.v4.new_markdown_cell(words(lang)["answer"]))
    if lang != "en":
        cells.insert(0, language_cell(lang))
    nb.cells = cells
    nb.metadata.pop("jupytext", None)
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    return nb


def _one_written_question_a_cell(cells):
    """Markdown cells split before each exercise (a written question's ``{exercise}`` block, a coding
    task's ``{exercise-start}``), so that a written question gets its own answer cell after it and the
    exercises are numbered in page order (a cell's ``{exercise-start}`` is converted before its blocks)."""
    for cell in cells:
        if cell.cell_type != "markdown":
            yield cell
            continue
        starts = [m.start() for m in re.finditer(r"^:::\{exercise(?:-start)?\}", cell.source, re.M)]
        bounds = sorted({0, *starts, len(cell.source)})
        for a, b in zip(bounds, bounds[1:]):
            if cell.source[a:b].strip():
                yield nbformat.v4.new_markdown_cell(cell.source[a:b].strip("\n"))


def language_cell(lang: str) -> nbformat.NotebookNode:
    """The first cell of a translated notebook: attnlab's messages in the notebook's language."""
    return nbformat.v4.new_code_cell(SET_LANGUAGE.format(lang=lang, comment=words(lang)["language comment"]))


def main(argv=None) -> list[pathlib.Path]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="output folder (default: notebooks/, notebooks/zh_CN/ for --lang zh_CN)")
    parser.add_argument("--solutions", action="store_true", help="also write the solution pages (instructors)")
    parser.add_argument("--lang", default="en", choices=["en", *LANGUAGES],
                        help="language of the markdown cells (default: en; zh_CN from locale/zh_CN)")
    args = parser.parse_args(argv)
    out = pathlib.Path(args.out or ROOT / "notebooks" / ("" if args.lang == "en" else args.lang))
    folders = ["chapters", "exercises"] + (["solutions"] if args.solutions else [])
    written = []
    for folder in folders:
        for page in sorted((ROOT / folder).glob("*.md")):
            target = out / folder / (page.stem + ".ipynb")
            target.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(to_notebook(page, keep_solution_links=False, lang=args.lang), target)
            written.append(target)
    print(f"wrote {len(written)} notebooks under {out}")
    return written


if __name__ == "__main__":
    main()
