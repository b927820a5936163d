"""The Chinese edition's catalogs of the pages' prose: extract, merge, report (``make translations``).

    python -m bookbuild translations update   extract messages (gettext builder) and merge them into
                                              locale/zh_CN/LC_MESSAGES/<page>.po (sphinx-intl);
                                              a changed English paragraph keeps its old translation
                                              marked fuzzy, which the build never shows
    python -m bookbuild translations report   the per-page table: translated / fuzzy / untranslated
    python -m bookbuild translations check    exit 1 unless every catalog holds exactly the current
                                              English text (extracted afresh) and translates all of it

Coverage is counted with polib, not ``sphinx-intl stat`` (which counts fuzzy entries as done).
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import polib

from ..editions import write_pot_files
from ..pages import ROOT
from .code_text import page_messages as code_messages

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


def extract() -> Path:
    """The English text of every page, one .pot per page (executed from the English cache)."""
    shutil.rmtree(POT_OUT, ignore_errors=True)      # Sphinx would skip pages it read before
    write_pot_files()
    # the pages the English cache lacks, several at once (the gettext build then reads them all)
    executed = subprocess.run([sys.executable, "-m", "bookbuild.execute", "--config", "_config_pot.yml",
                               "--toc", "_toc_pot.yml"], capture_output=True, text=True, cwd=ROOT)
    if executed.returncode != 0:
        sys.stderr.write(executed.stdout[-3000:] + executed.stderr[-3000:])
        raise SystemExit("executing the English pages failed (above)")
    # the build's own chatter (kernels starting) is noise; only a failure is worth showing
    done = subprocess.run([str(BIN / "jupyter-book"), "build", str(ROOT), "--config", str(ROOT / "_config_pot.yml"),
                           "--toc", str(ROOT / "_toc_pot.yml"),
                           "--builder", "custom", "--custom-builder", "gettext", "--path-output", str(POT_OUT)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-3000:] + done.stderr[-3000:])
        raise SystemExit("extracting the English text failed (above)")
    pots = POT_OUT / "_build" / "gettext"
    add_code_messages(pots)
    return pots


CODE_COMMENT = "code: a comment or docstring of the page's code (bookbuild.i18n.code_text)"


def add_code_messages(pots: Path) -> None:
    """Add to each page's template the comments and docstrings of the code it shows."""
    for pot_path in sorted(pots.rglob("*.pot")):
        page = ROOT / pot_path.relative_to(pots).with_suffix(".md")
        if not page.exists():
            continue
        pot = polib.pofile(str(pot_path), wrapwidth=0)
        held = {entry.msgid for entry in pot}
        added = [m for m in code_messages(page) if m not in held]
        for message in added:
            pot.append(polib.POEntry(msgid=message, msgstr="", comment=CODE_COMMENT))
        if added:
            pot.save(str(pot_path))


def update() -> None:
    subprocess.run([str(BIN / "sphinx-intl"), "update", "-p", str(extract()),
                    "-l", "zh_CN", "-d", str(ROOT / "locale"), "-w", "0"], check=True, stdout=subprocess.DEVNULL)
    for po_path in CATALOGS.rglob("*.po"):        # text no longer in the page: its entry goes
        po = polib.pofile(str(po_path))
        gone = [e for e in po if e.obsolete]
        for entry in gone:
            po.remove(entry)
        if gone:
            po.save(str(po_path))


def stale() -> list[str]:
    """Pages whose catalog does not hold exactly the English text extracted now."""
    pots = extract()
    problems = []
    pages = {str(p.relative_to(pots).with_suffix("")) for p in pots.rglob("*.pot")}
    done = {str(p.relative_to(CATALOGS).with_suffix("")) for p in CATALOGS.rglob("*.po")}
    problems += [f"{page}: no catalog" for page in sorted(pages - done)]
    problems += [f"{page}: a catalog for a page that no longer exists" for page in sorted(done - pages)]
    for page in sorted(pages & done):
        english = {e.msgid for e in polib.pofile(str(pots / f"{page}.pot"))}
        held = {e.msgid for e in polib.pofile(str(CATALOGS / f"{page}.po")) if not e.obsolete}
        if english != held:
            new, gone = english - held, held - english
            problems.append(f"{page}: {len(new)} new English text(s), {len(gone)} no longer in the page"
                            + (f"; first new: {sorted(new)[0][:80]!r}" if new else ""))
    return problems


def main(argv: list[str]) -> int:
    if argv == ["update"]:
        update()
        argv = ["report"]
    if argv == ["report"]:
        rows = coverage()
        print(table(rows))
        return 0
    if argv == ["check"]:
        problems = stale() + [f"{r.page}: {r.fuzzy} fuzzy, {r.untranslated} untranslated"
                              for r in coverage() if not r.complete]
        print("\n".join(problems) or "every catalog is current and complete")
        if problems:
            print("run `make translations`, translate what it reports, and commit locale/", file=sys.stderr)
        return 1 if problems else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
