"""Grade a folder of submitted notebooks: a gradebook and feedback in words (``make grade``).

    python tools/grade.py --chapter 03 --submissions DIR [--timeout 120] [--question-timeout 30]

Every ``DIR/*.ipynb`` is graded against the chapter's autograder (``make assignments`` writes it
to ``assignments/exNN_*/autograder/``); the file stem is the student id. Writes

    DIR/gradebook.csv           student,total,possible, then one column of points per question
    DIR/feedback/<student>.md   per question: points and the checker's diagnosis in plain words
    DIR/written/<student>.md    the answers to the written questions, to grade by hand

The questions, their points and checks come from the autograder zip's ``otter_config.json`` (the
configuration of :mod:`attnlab.grading.otter_plugin`), so ``make grade``, ``otter run`` and
Gradescope grade alike. Each notebook is graded in its own fresh process
(:mod:`attnlab.grading.sandbox`); a file that is not a notebook gets zero and a feedback file
that says what is wrong with it. Written questions are listed in the feedback, to grade by hand.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import csv
import json
import os
import pathlib
import sys
import zipfile

import nbformat

ROOT = pathlib.Path(__file__).resolve().parents[1]
from attnlab.grading import NotebookResult, QuestionResult, grade_notebook  # noqa: E402
from attnlab.grading.otter_plugin import questions_from_config  # noqa: E402

PLUGIN = "attnlab.grading.otter_plugin.IsolatedGrading"


def autograder_for(chapter: str, assignments: pathlib.Path) -> pathlib.Path:
    found = sorted(assignments.glob(f"ex{chapter}_*/autograder/*-autograder_*.zip"))
    if not found:
        raise SystemExit(f"no autograder for chapter {chapter} under {assignments}/: run "
                         f'`make assignments CHAPTERS="{chapter}"` first')
    return found[-1]


def read_autograder(path: pathlib.Path):
    """(assignment name, questions, written question names, plugin config) from an autograder zip."""
    with zipfile.ZipFile(path) as zf:
        config = json.loads(zf.read("otter_config.json"))
    plugin = next(p[PLUGIN] for p in config.get("plugins", []) if isinstance(p, dict) and PLUGIN in p)
    return (config.get("assignment_name") or path.name.split("-autograder_")[0], questions_from_config(plugin),
            plugin.get("written", []), plugin)


def problem_with(path: pathlib.Path) -> str:
    """Why ``path`` cannot be graded as a notebook, or "" if it can."""
    data = path.read_bytes()
    if not data.strip():
        return "The file is empty."
    try:
        content = json.loads(data)
    except UnicodeDecodeError:
        return "The file is not text: it is not a Jupyter notebook (.ipynb), which is a JSON text file."
    except json.JSONDecodeError as error:
        return (f"The file is not valid JSON (line {error.lineno}, column {error.colno}: {error.msg}), so "
                f"it is not a Jupyter notebook; was it saved from Jupyter, or renamed from another file?")
    if not isinstance(content, dict) or "cells" not in content:
        return "The file is JSON but not a Jupyter notebook (it has no list of cells)."
    try:
        nbformat.validate(nbformat.reads(data.decode(), as_version=4))
    except Exception as error:                               # nbformat raises several kinds
        return f"The file is not a valid Jupyter notebook: {str(error).splitlines()[0]}"
    return ""


def grade_one(path: pathlib.Path, questions, timeout, question_timeout) -> tuple[NotebookResult, str]:
    problem = problem_with(path)
    if problem:
        return NotebookResult([QuestionResult(q.name, q.points, note="the file is not a notebook")
                               for q in questions], [problem]), problem
    return grade_notebook(path, questions, timeout=timeout, question_timeout=question_timeout), ""


def _points(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _out_of(earned: float, possible: float) -> str:
    return f"{_points(earned)} / {_points(possible)} point{'' if possible == 1 else 's'}"


def feedback(student: str, assignment: str, result: NotebookResult, problem: str, written) -> str:
    lines = [f"# {assignment}: feedback for {student}", "",
             f"**Total: {_out_of(result.total, result.possible)}**", ""]
    if problem:
        lines += ["**Your file could not be graded.** " + problem, ""]
    for q in result.questions:
        lines += [f"## {q.name}: {_out_of(q.earned, q.possible)}", ""]
        if q.note:
            lines.append(f"- Not graded: {q.note}.")
        for check in q.checks:
            lines.append(f"- {check['status']}: {' '.join(str(check['message']).split())}")
        lines.append("")
    if written:
        lines += ["## Written questions", "", "Graded by hand, not included above: " + ", ".join(written) + ".", ""]
    notes = [n for n in result.notes if n != problem]
    if notes:
        lines += ["## Notes on running your notebook", ""] + [f"- {n}" for n in notes] + [""]
    return "\n".join(lines)


def written_answers(path: pathlib.Path, student: str, written) -> str:
    """The written questions' cells of a submission (otter's manual-question markers), to read and grade."""
    nb = nbformat.read(path, as_version=4)
    lines, inside = [f"# Written answers of {student}", ""], False
    for cell in nb.cells:
        text = cell.source
        if cell.cell_type == "markdown" and "<!-- BEGIN QUESTION -->" in text:
            inside, text = True, text.split("<!-- BEGIN QUESTION -->", 1)[1]
        if inside:
            body = text.split("<!-- END QUESTION -->", 1)[0].strip()
            if body:
                lines += [body if cell.cell_type == "markdown" else f"```python\n{body}\n```", ""]
        if "<!-- END QUESTION -->" in text:
            inside = False
    if len(lines) == 2:
        lines.append(f"(no written answers found; the questions were {', '.join(written)})")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chapter", required=True, help="two-digit chapter number, e.g. 03")
    parser.add_argument("--submissions", required=True, help="folder of submitted .ipynb files")
    parser.add_argument("--timeout", type=float, default=None, help="seconds per notebook (default: the zip's)")
    parser.add_argument("--question-timeout", type=float, default=None, help="seconds per cell or question")
    parser.add_argument("--assignments", default=str(ROOT / "assignments"))
    parser.add_argument("--jobs", type=int, default=max(1, min(4, (os.cpu_count() or 1) // 2)),
                        help="notebooks graded at the same time")
    args = parser.parse_args(argv)
    folder = pathlib.Path(args.submissions)
    if not folder.is_dir():
        raise SystemExit(f"SUBMISSIONS={folder}: no such folder")
    assignment, questions, written, plugin = read_autograder(autograder_for(args.chapter.zfill(2),
                                                                            pathlib.Path(args.assignments)))
    timeout = args.timeout or float(plugin.get("timeout", 120))
    question_timeout = args.question_timeout or min(float(plugin.get("question_timeout", 30)), timeout)
    paths = sorted(folder.glob("*.ipynb"))
    if not paths:
        raise SystemExit(f"no .ipynb files in {folder}")
    results = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(grade_one, p, questions, timeout, question_timeout): p for p in paths}
        done = concurrent.futures.as_completed(futures)
        if len(paths) > 1:
            from tqdm import tqdm
            done = tqdm(done, total=len(paths), desc=f"grading {assignment}", unit="notebook", file=sys.stderr)
        for future in done:
            results[futures[future].stem] = future.result()
    (folder / "feedback").mkdir(exist_ok=True)
    with open(folder / "gradebook.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["student", "total", "possible", *[q.name for q in questions]])
        for student in sorted(results):
            result, problem = results[student]
            writer.writerow([student, _points(result.total), _points(result.possible),
                             *[_points(q.earned) for q in result.questions]])
            (folder / "feedback" / f"{student}.md").write_text(
                feedback(student, assignment, result, problem, written))
            if written and not problem:
                (folder / "written").mkdir(exist_ok=True)
                (folder / "written" / f"{student}.md").write_text(
                    written_answers(folder / f"{student}.ipynb", student, written))
    print(f"{len(results)} notebooks graded: {folder / 'gradebook.csv'}, feedback in {folder / 'feedback'}/")


if __name__ == "__main__":
    main()
