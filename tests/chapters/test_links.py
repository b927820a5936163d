"""Every chapter ends by linking its exercise sheet, and every sheet is linked from its chapter."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.md"))
SHEETS = sorted((ROOT / "exercises").glob("ex[0-9][0-9]_*.md"))


def _label(sheet: Path) -> str:
    return re.search(r"^\((ex-[\w-]+)\)=$", sheet.read_text(), re.M)[1]


def test_every_chapter_ends_with_a_link_to_its_own_sheet():
    assert len(CHAPTERS) == len(SHEETS) >= 11
    for chapter, sheet in zip(CHAPTERS, SHEETS):
        assert chapter.name[:2] == sheet.name[2:4], (chapter.name, sheet.name)
        last = chapter.read_text().rstrip().splitlines()[-1]
        assert last == f"Exercises for this chapter: {{ref}}`{_label(sheet)}`.", \
            f"{chapter.name} ends with {last!r}, not the link to {sheet.name}"
