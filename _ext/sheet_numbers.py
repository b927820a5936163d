"""Bespoke: exercises are numbered by their sheet: the second exercise of ``exercises/ex03_masks.md`` is Exercise 3.2.

sphinx-exercise numbers exercises through Sphinx's figure numbering, one count for the whole book
("Exercise 27"). A student, a solution page, a checker message and the instructors' table all say
"Exercise 3.2" instead: chapter 3's sheet, its second exercise. This extension rewrites the numbers
Sphinx assigned to the exercises of every ``exNN_*`` page once they are known (they are kept in
``env.toc_fignumbers``, which sphinx-exercise reads for titles, solution titles and references), so
every place that shows a number shows the same one. :func:`sheet_number` is the rule, also used by
the notebook and instructors' tools.
"""
from __future__ import annotations

import re

SHEET = re.compile(r"(?:^|/)(?:ex|sol)(\d\d)_[^/]*$")


def sheet_number(docname: str) -> int | None:
    """The chapter number of a sheet's docname ("exercises/ex03_masks" -> 3), else None."""
    match = SHEET.search(docname)
    return int(match.group(1)) if match else None


def number_exercises_by_sheet(app, env) -> None:
    for docname, kinds in env.toc_fignumbers.items():
        chapter = sheet_number(docname)
        if chapter is None or "exercise" not in kinds:
            continue
        ordered = sorted(kinds["exercise"].items(), key=lambda item: item[1])     # the order on the page
        kinds["exercise"] = {ids: (chapter, position) for position, (ids, _) in enumerate(ordered, 1)}


def setup(app):
    # after the figure numbers are assigned (TocTreeCollector, at env-get-updated), before anything is written
    app.connect("env-check-consistency", number_exercises_by_sheet)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
