"""The Chinese edition's catalogs: extract, merge, report (``make translations``).

    python tools/translations.py update    extract messages (gettext builder) and merge them into
                                           locale/zh_CN/LC_MESSAGES/<page>.po (sphinx-intl);
                                           a changed English paragraph keeps its old translation
                                           marked fuzzy, which the build never shows
    python tools/translations.py report    the per-page table: translated / fuzzy / untranslated

Coverage is counted with polib, not ``sphinx-intl stat`` (which counts fuzzy entries as done).
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import polib

ROOT = Path(__file__).resolve().parents[1]
CATALOGS = ROOT / "locale" / "zh_CN" / "LC_MESSAGES"
POT_OUT = ROOT / "_build" / "pot"
BIN = Path(sys.executable).parent


@dataclass(frozen=True)
class Coverage:
    page: str
    translated: int
    fuzzy: int
    untranslated: int

    @property
    def total(self) -> int:
        return self.translated + self.fuzzy + self.untranslated

    @property
    def complete(self) -> bool:
        return self.fuzzy == 0 and self.untranslated == 0


def coverage() -> list[Coverage]:
    rows = []
    for po_path in sorted(CATALOGS.rglob("*.po")):
        po = polib.pofile(str(po_path))
        live = [e for e in po if not e.obsolete]
        fuzzy = sum(1 for e in live if e.fuzzy)
        done = sum(1 for e in live if e.translated() and not e.fuzzy)
        rows.append(Coverage(str(po_path.relative_to(CATALOGS).with_suffix("")), done, fuzzy,
                             len(live) - done - fuzzy))
    return rows


def table(rows: list[Coverage]) -> str:
    width = max([len(r.page) for r in rows] + [4])
    lines = [f"{'page':<{width}}  translated  fuzzy  untranslated   done"]
    for r in rows:
        share = 100 * r.translated / r.total if r.total else 100
        lines.append(f"{r.page:<{width}}  {r.translated:>10}  {r.fuzzy:>5}  {r.untranslated:>12}  {share:5.1f}%")
    return "\n".join(lines)


def update() -> None:
    shutil.rmtree(POT_OUT, ignore_errors=True)      # Sphinx would skip pages it read before
    subprocess.run([sys.executable, str(ROOT / "tools" / "edition_config.py"), "pot"], check=True)
    subprocess.run([str(BIN / "jupyter-book"), "build", str(ROOT), "--config", str(ROOT / "_config_pot.yml"),
                    "--builder", "custom", "--custom-builder", "gettext", "--path-output", str(POT_OUT)],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run([str(BIN / "sphinx-intl"), "update", "-p", str(POT_OUT / "_build" / "gettext"),
                    "-l", "zh_CN", "-d", str(ROOT / "locale"), "-w", "0"], check=True, stdout=subprocess.DEVNULL)


def main(argv: list[str]) -> int:
    if argv == ["update"]:
        update()
        argv = ["report"]
    if argv == ["report"]:
        rows = coverage()
        print(table(rows))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
