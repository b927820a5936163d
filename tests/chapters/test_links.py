"""Every chapter ends by linking its exercise sheet, and every sheet is linked from its chapter.

Chapters and sheets pair up by their number (``chapters/07_position.md`` with ``exercises/ex07_position.md``),
not by their place in a sorted list, so a chapter that is not written yet (a gap in the numbers) never
shifts the pairs after it.
"""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = {p.name[:2]: p for p in (ROOT / "chapters").glob("[0-9][0-9]_*.md")}
SHEETS = {p.name[2:4]: p for p in (ROOT / "exercises").glob("ex[0-9][0-9]_*.md")}


def _label(sheet: Path) -> str:
    return re.search(r"^\((ex-[\w-]+)\)=$", sheet.read_text(), re.M)[1]


def test_chapters_and_sheets_have_the_same_numbers():
    assert len(CHAPTERS) >= 10
    assert sorted(CHAPTERS) == sorted(SHEETS), "a chapter without its sheet, or a sheet without its chapter"


def test_every_chapter_ends_with_a_link_to_its_own_sheet():
    assert sorted(CHAPTERS) == sorted(SHEETS) and len(CHAPTERS) >= 12, (sorted(CHAPTERS), sorted(SHEETS))
    for number, chapter in sorted(CHAPTERS.items()):
        sheet = SHEETS[number]
        last = chapter.read_text().rstrip().splitlines()[-1]
        assert last == f"Exercises for this chapter: {{ref}}`{_label(sheet)}`.", \
            f"{chapter.name} ends with {last!r}, not the link to {sheet.name}"
