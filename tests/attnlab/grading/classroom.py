"""A class of chapter 3 notebooks: each question right, wrong or left blank, drawn with a fixed seed.

Built from the solved notebook of otter's assignment: a right answer keeps the solution's cells,
a blank one drops them (the stub above still raises ``NotImplementedError``, the placeholder
stays ``...``), a wrong one edits one line of them into a classic mistake. The marks each
student should earn follow from the choices alone (``expected_marks``), not from a grader.
"""
from __future__ import annotations

import pathlib
import random

import nbformat

# question: (a line that only its solution cells contain, the edit that makes them wrong)
MISTAKES = {
    "ex-masks-causal": ("return k_pos <= q_pos", ("return k_pos <= q_pos", "return k_pos < q_pos")),
    "ex-masks-position-8": ("answer_visible = int(", ("answer_lost = int((right & ~top_left).sum())",
                                                      "answer_lost = int(top_left.sum())")),
    "ex-masks-padding": ("real = np.arange(S)", ("< lengths[:, None]", "<= lengths[:, None]")),
    "ex-masks-documents": ("ids[..., :, None] ==", ("ids[..., :, None] ==", "ids[..., :, None] >=")),
    "ex-masks-attention": ("s = q @ np.swapaxes", (" / np.sqrt(q.shape[-1])", "")),
    "ex-masks-causal-attention": ("q_pos = query_offset +", ("q_pos = query_offset + ", "q_pos = ")),
}
POINTS = {"ex-masks-position-8": 2}          # one point per check: this question has two


def _solution_cells(nb, question: str) -> list[int]:
    """Indices of the solution cells of ``question``: those between its stub and its grader.check."""
    marker = MISTAKES[question][0]
    first = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code" and marker in c.source
                 and "BEGIN SOLUTION" in c.source)
    end = next(i for i in range(first, len(nb.cells)) if f'grader.check("{question}")' in nb.cells[i].source)
    return [i for i in range(first, end) if "BEGIN SOLUTION" in nb.cells[i].source]


def notebook(solved, choices: dict[str, str]):
    nb = nbformat.from_dict(solved)
    drop = []
    for question, choice in choices.items():
        cells = _solution_cells(nb, question)
        if choice == "blank":
            drop += cells
        elif choice == "wrong":
            old, new = MISTAKES[question][1]
            cell = nb.cells[cells[0]]
            assert old in cell.source, (question, old)
            cell.source = cell.source.replace(old, new)
    nb.cells = [c for i, c in enumerate(nb.cells) if i not in set(drop)]
    return nb


def choices_of_class(n: int = 30, seed: int = 3) -> dict[str, dict[str, str]]:
    """{student: {question: right|wrong|blank}}: one all right, one all blank, the rest drawn."""
    rng = random.Random(seed)
    students = {"s00-right": {q: "right" for q in MISTAKES}, "s01-blank": {q: "blank" for q in MISTAKES}}
    for i in range(2, n):
        students[f"s{i:02d}"] = {q: rng.choice(["right", "right", "wrong", "blank"]) for q in MISTAKES}
    return students


def expected_marks(choices: dict[str, str]) -> dict[str, float]:
    """Points per question: all of them for a right answer, none for a blank or wrong one, except the
    two numbers of position-8, which its solution computes with ``causal_mask``: both are right
    only with a right mask, and its wrong variant changes the second number only."""
    marks = {q: POINTS.get(q, 1) if choice == "right" else 0 for q, choice in choices.items()}
    if choices["ex-masks-causal"] != "right":
        marks["ex-masks-position-8"] = 0
    elif choices["ex-masks-position-8"] == "wrong":
        marks["ex-masks-position-8"] = 1
    return marks


def write_class(assignment: pathlib.Path, folder: pathlib.Path, n: int = 30) -> dict[str, dict[str, str]]:
    """Write the class into ``folder`` (one ``<student>.ipynb`` each); return the choices."""
    stem = assignment.name.split("-")[0]
    solved = nbformat.read(assignment / "autograder" / f"{stem}.ipynb", as_version=4)
    folder.mkdir(parents=True, exist_ok=True)
    students = choices_of_class(n)
    for student, choices in students.items():
        nbformat.write(notebook(solved, choices), folder / f"{student}.ipynb")
    return students
