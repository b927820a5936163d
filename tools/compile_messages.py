"""Compile attnlab's message catalogs (``attnlab/locale/*/LC_MESSAGES/{attnlab,pages}.po``) into ``.mo``.

    python tools/compile_messages.py           compile every catalog whose .mo is missing or older
    python tools/compile_messages.py extract   write attnlab/locale/attnlab.pot from the _("...") calls
                                               and merge it into every catalog (new entries untranslated,
                                               changed ones fuzzy); likewise attnlab/locale/pages.pot
                                               from the tr("...") and describe(fig, "...") calls in the
                                               code cells of every page
                                               into pages.po (entries no page uses become obsolete)

``make`` runs the first form; the package build does the same (see setup.py).
"""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

from babel.messages import frontend, mofile, pofile
from babel.messages.catalog import Catalog

sys.path.insert(0, str(Path(__file__).resolve().parent))        # also when loaded from a file by a test
from test_summaries import summary, test_modules  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LOCALE = ROOT / "attnlab" / "locale"


def compile_all(locale: Path = LOCALE) -> list[Path]:
    """Compile every ``<locale>/<lang>/LC_MESSAGES/*.po`` whose .mo is missing or older."""
    written = []
    for po in sorted(locale.glob("*/LC_MESSAGES/*.po")):
        mo = po.with_suffix(".mo")
        if mo.exists() and mo.stat().st_mtime >= po.stat().st_mtime:
            continue
        with po.open("rb") as handle:
            catalog = pofile.read_po(handle, locale=po.parts[-3])
        with mo.open("wb") as handle:
            mofile.write_mo(handle, catalog, use_fuzzy=False)
        written.append(mo)
    return written


def extract() -> None:
    pot = LOCALE / "attnlab.pot"
    pybabel = frontend.CommandLineInterface().run
    pybabel(["pybabel", "-q", "extract", "-k", "_", "-k", "N_", "--no-location", "--omit-header", "--no-wrap",
             "-o", str(pot), str(ROOT / "attnlab")])
    for po in sorted(LOCALE.glob("*/LC_MESSAGES/attnlab.po")):
        pybabel(["pybabel", "-q", "update", "--no-wrap", "-i", str(pot), "-o", str(po), "-l", po.parts[-3]])
    extract_pages()


# The pages whose code cells may call tr(): every MyST notebook of the book.
PAGE_FOLDERS = (".", "chapters", "exercises", "solutions")
_CODE_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```\s*$", re.M | re.S)
_TR_NAMES = {"tr", "page_text"}


def pages(root: Path = ROOT) -> list[Path]:
    return sorted(p for folder in PAGE_FOLDERS for p in (root / folder).glob("*.md")
                  if _CODE_CELL.search(p.read_text(encoding="utf-8")))


def code_cells(page: Path):
    """(first line number, source) of each code cell of ``page``, its options and magics blanked."""
    text = page.read_text(encoding="utf-8")
    for match in _CODE_CELL.finditer(text):
        line = text.count("\n", 0, match.start(1)) + 1
        lines = match.group(1).split("\n")
        if lines[0].strip() == "---":                          # a YAML block of cell options
            end = lines.index("---", 1)
            lines[: end + 1] = [""] * (end + 1)
        yield line, "\n".join("" if ln.lstrip().startswith(("%", "!", ":")) else ln for ln in lines)


def is_tr_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    return name in _TR_NAMES


def is_describe_call(node: ast.AST) -> bool:
    """``al.plots.describe(fig, "...")`` (or ``plots.describe``, a bare ``describe``): a figure's alt
    text, its second argument; a DataFrame's ``df.describe(...)`` is not one."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Name):
        return func.id == "describe"
    if not (isinstance(func, ast.Attribute) and func.attr == "describe"):
        return False
    owner = func.value
    return (owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", None)) == "plots"


_TABLE_NAMES = {"tr_table", "page_table"}
_LABEL_CALLS = {"set_index", "rename_axis"}


def _has_words(text: str) -> bool:
    return bool(re.search(r"[A-Za-z]{3,}", re.sub(r"\$[^$]*\$", "", text)))


def table_labels(tree: ast.AST):
    """The literal column and index names of a cell that shows a table through ``tr_table``: the
    string keys of its dict literals, the names given to ``set_index`` / ``rename_axis``, the
    ``columns=``, ``index=`` and ``name=`` of its calls and the new columns it assigns (``t["x"] = ...``);
    those with a word in them (``T``, ``d_k`` stay as they are)."""
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    if not any(_call_name(n) in _TABLE_NAMES for n in calls):
        return
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            found += [k for k in node.keys if k is not None]
        elif isinstance(node, ast.Call):
            if _call_name(node) in _LABEL_CALLS:
                found += node.args
            found += [k.value for k in node.keywords if k.arg in ("columns", "index", "name")]
        elif isinstance(node, ast.Assign):
            found += [t.slice for t in node.targets if isinstance(t, ast.Subscript)]
    for node in found:
        for item in (node.elts if isinstance(node, (ast.List, ast.Tuple)) else [node]):
            if isinstance(item, ast.Constant) and isinstance(item.value, str) and _has_words(item.value):
                yield item


def _call_name(node: ast.Call) -> str | None:
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def page_messages(root: Path = ROOT) -> dict[str, list[tuple[str, int]]]:
    """Every ``tr("...")`` / ``al.tr("...")`` literal in the pages' code cells and every figure's
    description (``al.plots.describe(fig, "...")``), with where it is,
    the labels of the tables a cell shows through ``tr_table`` (see ``table_labels``), and the
    summary of every test module, which checking.md shows (``page_text_of_file``).

    A call whose argument is not one literal string is an error: a translator could never see it.
    """
    found: dict[str, list[tuple[str, int]]] = {}
    for page in pages(root):
        name = page.relative_to(root).as_posix()
        for first, source in code_cells(page):
            tree = ast.parse(source, filename=name)
            for node in table_labels(tree):
                found.setdefault(node.value, []).append((name, first + node.lineno - 1))
            for node in ast.walk(tree):
                if not (is_tr_call(node) or is_describe_call(node)):
                    continue
                line = first + node.lineno - 1
                arg = node.args[-1] if len(node.args) == 1 + is_describe_call(node) and not node.keywords else None
                if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
                    raise SystemExit(f"{name}:{line}: {_call_name(node)}() needs one literal string (the English text)")
                found.setdefault(arg.value, []).append((name, line))
    for module in test_modules(root):            # checking.md shows each one's summary
        found.setdefault(summary(module), []).append((module.relative_to(root).as_posix(), 1))
    return found


def extract_pages() -> None:
    """Write ``attnlab/locale/pages.pot`` and merge it into every ``pages.po``."""
    template = Catalog(project="attnlab pages", fuzzy=False)
    for message, where in sorted(page_messages().items()):
        flags = ("python-brace-format",) if "{" in message else ()
        template.add(message, locations=where, flags=flags)
    with (LOCALE / "pages.pot").open("wb") as handle:
        pofile.write_po(handle, template, omit_header=True, no_location=True, width=0)
    for po in sorted(LOCALE.glob("*/LC_MESSAGES/attnlab.po")):      # the languages attnlab speaks
        target = po.with_name("pages.po")
        if target.exists():
            with target.open("rb") as handle:
                catalog = pofile.read_po(handle, locale=po.parts[-3])
        else:
            catalog = Catalog(locale=po.parts[-3], project="attnlab pages", fuzzy=False)
        catalog.update(template, update_header_comment=False)
        with target.open("wb") as handle:
            pofile.write_po(handle, catalog, no_location=True, width=0, sort_output=True)


if __name__ == "__main__":
    if sys.argv[1:] == ["extract"]:
        extract()
    for path in compile_all():
        print(path.relative_to(ROOT))
