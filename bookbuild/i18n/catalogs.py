"""attnlab's two message catalogs: extracted from the code, merged, compiled.

    python -m bookbuild.i18n.catalogs           compile every catalog whose .mo is missing or older
    python -m bookbuild.i18n.catalogs extract   extract, merge and compile:
        attnlab.po   the _("...") and N_("...") messages of the package (pybabel)
        pages.po     what the pages' code shows (bookbuild.i18n.page_strings) and the summary of
                     every test module (checking.md shows them)

Merging keeps every translation whose English is unchanged, marks a changed one fuzzy (never
shown), and drops what no page uses any more. A *layout* template (a table row's format, whose
words are all in its fields) is its own translation: it is filled in, not left to a translator.
"""
from __future__ import annotations

import sys
from pathlib import Path

from attnlab._catalogs import compile_all

from ..pages import ROOT
from ..test_index import suite_modules, summary
from .page_strings import DATA_STRINGS, book_strings, layouts

LOCALE = ROOT / "attnlab" / "locale"
LAYOUT_COMMENT = "layout: its words are in its fields"


def extract_package() -> None:
    from babel.messages import frontend

    pot = LOCALE / "attnlab.pot"
    pybabel = frontend.CommandLineInterface().run
    pybabel(["pybabel", "-q", "extract", "-k", "_", "-k", "N_", "--no-location", "--omit-header", "--no-wrap",
             "-o", str(pot), str(ROOT / "attnlab")])
    for po in sorted(LOCALE.glob("*/LC_MESSAGES/attnlab.po")):
        pybabel(["pybabel", "-q", "update", "--no-wrap", "-i", str(pot), "-o", str(po), "-l", po.parts[-3]])


def page_messages(root: Path = ROOT) -> dict[str, list[tuple[str, int]]]:
    """Every string the pages show (messages and templates) and every test module's summary, with where."""
    found = book_strings(root)
    for text in DATA_STRINGS:
        found.setdefault(text, []).append(("attnlab/roofline.py", 0))
    for module in suite_modules(root):            # checking.md shows each one's summary
        found.setdefault(summary(module), []).append((module.relative_to(root).as_posix(), 1))
    return found


def extract_pages(root: Path = ROOT) -> None:
    """Write ``attnlab/locale/pages.pot`` and merge it into every ``pages.po``."""
    from babel.messages import pofile
    from babel.messages.catalog import Catalog

    template = Catalog(project="attnlab pages", fuzzy=False)
    layout = layouts(root)
    for message, where in sorted(page_messages(root).items()):
        flags = ("python-brace-format",) if "{" in message else ()
        template.add(message, locations=where, flags=flags,
                     auto_comments=(LAYOUT_COMMENT,) if message in layout else ())
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
        for message in catalog:
            if message.id in layout:
                message.string, message.flags = message.id, message.flags - {"fuzzy"}
        with target.open("wb") as handle:
            pofile.write_po(handle, catalog, no_location=True, width=0, sort_output=True, ignore_obsolete=True)


def main(argv: list[str]) -> int:
    if argv == ["extract"]:
        extract_package()
        extract_pages()
    elif argv:
        print(__doc__, file=sys.stderr)
        return 2
    for path in compile_all(LOCALE):
        print(path.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
