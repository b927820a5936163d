"""Every chapter is a first reader's path: it opens with its reading time, its core path reads in at
most 45 minutes, its optional sections are marked, it ends with "What to remember" and the link to
its sheet, the running example's sentence recurs where the book says it does, and the diagrams are
shown."""
import pathlib
import re

import core_path  # the Sphinx extensions are on pytest's pythonpath
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.md"))
CORE_LIMIT_MINUTES = 45
# the chapters the intro says reuse "Mia said she won" (and chapters 1 and 2, which introduce it)
RUNNING_EXAMPLE_CHAPTERS = ("01", "02", "03", "05", "06", "12")


def headings(text: str) -> list[tuple[int, str]]:
    return [(i, line) for i, line in enumerate(text.splitlines()) if re.match(r"#{1,3} ", line)]


@pytest.mark.parametrize("page", CHAPTERS, ids=lambda p: p.stem)
def test_the_chapter_opens_with_its_reading_time_and_its_core_path_fits(page):
    text = page.read_text(encoding="utf-8")
    first_section = next(i for i, line in headings(text)[1:])
    assert "{reading-time}`core`" in "\n".join(text.splitlines()[:first_section]), \
        f"{page.name}: no reading time before its first section"
    minutes = core_path.reading_time(text).minutes
    assert minutes <= CORE_LIMIT_MINUTES, f"{page.name}: the core path reads in {minutes} minutes"


@pytest.mark.parametrize("page", CHAPTERS, ids=lambda p: p.stem)
def test_the_chapter_ends_with_what_to_remember(page):
    lines = page.read_text(encoding="utf-8").rstrip().splitlines()
    last_heading = headings("\n".join(lines))[-1]
    assert last_heading[1] == "## What to remember", f"{page.name}: the last section is {last_heading[1]!r}"
    assert "(remember-" in lines[last_heading[0] - 1] + lines[last_heading[0] - 2], \
        f"{page.name}: What to remember has no (remember-...)= label"
    # the last line, the link to the sheet, is tests/chapters/test_links.py's to check


@pytest.mark.parametrize("page", CHAPTERS, ids=lambda p: p.stem)
def test_every_going_deeper_section_is_labelled_as_optional(page):
    lines = page.read_text(encoding="utf-8").splitlines()
    for i, line in headings("\n".join(lines)):
        if "Going deeper" in line:
            assert lines[i - 2].startswith("(deeper-") or lines[i - 1].startswith("(deeper-"), \
                f"{page.name}: {line!r} has no (deeper-...)= label, so it is not marked optional"


@pytest.mark.parametrize("number", RUNNING_EXAMPLE_CHAPTERS)
def test_the_running_example_recurs(number):
    (page,) = [p for p in CHAPTERS if p.name.startswith(number)]
    text = page.read_text(encoding="utf-8")
    assert re.search(r"\b(?:al|attnlab)\.example\b", text), f"{page.name} does not use attnlab.example"
    for token in ("Mia", "said", "she", "won"):
        assert re.search(rf"\b{token}\b", text), f"{page.name} never names the running example's {token!r}"


def test_the_chapters_show_at_least_ten_different_diagrams():
    shown = set()
    for page in CHAPTERS:
        shown |= set(re.findall(r"^[\s:]*(?:name|label): (diag-[\w-]+)", page.read_text(encoding="utf-8"), re.M))
    assert len(shown) >= 10, sorted(shown)
