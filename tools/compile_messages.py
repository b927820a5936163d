"""Compile attnlab's message catalogs (``attnlab/locale/*/LC_MESSAGES/attnlab.po``) into ``.mo``.

    python tools/compile_messages.py           compile every catalog whose .mo is missing or older
    python tools/compile_messages.py extract   write attnlab/locale/attnlab.pot from the _("...") calls
                                               and merge it into every catalog (new entries untranslated,
                                               changed ones fuzzy)

``make`` runs the first form; the package build does the same (see setup.py).
"""
from __future__ import annotations

import sys
from pathlib import Path

from babel.messages import frontend, mofile, pofile

ROOT = Path(__file__).resolve().parents[1]
LOCALE = ROOT / "attnlab" / "locale"


def compile_all(locale: Path = LOCALE) -> list[Path]:
    """Compile every ``<locale>/<lang>/LC_MESSAGES/attnlab.po`` whose .mo is missing or older."""
    written = []
    for po in sorted(locale.glob("*/LC_MESSAGES/attnlab.po")):
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


if __name__ == "__main__":
    if sys.argv[1:] == ["extract"]:
        extract()
    for path in compile_all():
        print(path.relative_to(ROOT))
