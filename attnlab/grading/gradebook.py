"""Grading a folder of submitted notebooks: a gradebook and feedback in words (``make grade``).

Every ``DIR/*.ipynb`` is graded against an autograder that ``make assignments`` built; the file
stem is the student id. Written by this process, after every sandbox has ended:

    DIR/gradebook.csv           student,total,possible, one column of points per autograded
                                question, then one empty column per written question (to fill by
                                hand; ``possible`` counts their points, ``total`` the autograded ones)
    DIR/feedback/<student>.md   per question: points and the checker's diagnosis in plain words
    DIR/written/<student>.md    the answers to the written questions, to grade by hand
    DIR/UNSAFE.md               only with ``--unsafe`` where there is no sandbox: says so

The questions, their points and checks come from the autograder zip's ``otter_config.json`` (the
configuration of :mod:`.otter_plugin`), so ``make grade``, ``otter run`` and Gradescope grade alike.
The checkers' cases are drawn from a seed chosen for the run (``--seed`` repeats a run), which
the feedback records. The feedback is in the language of ``--lang``, else ``$ATTNLAB_LANG``, else
the autograder's.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import csv
import json
import os
import pathlib
import queue
import shutil
import sys
import time
import zipfile
from dataclasses import dataclass

from ..i18n import N_, _
from . import notebook as nb
from .supervisor import NOT_GRADED, NotebookResult, Question, QuestionResult, grade_notebook

PLUGIN = "attnlab.grading.otter_plugin.IsolatedGrading"
REFUSAL = N_("make grade runs each notebook in its own bubblewrap sandbox, and none can be started here ({why}). "
             "Grade on Linux with bubblewrap installed (Debian and Ubuntu: `sudo apt install bubblewrap`), or "
             "in Docker with `otter grade` (see instructors.md, \"Grading a class of hundreds\"). Only for "
             "notebooks you trust: `make grade ... UNSAFE=1` grades without a sandbox.")

NO_BWRAP = N_("bwrap is not installed")
BWRAP_FAILS = N_("bwrap is installed but cannot start a sandbox: are user namespaces turned off?")


@dataclass
class Autograder:
    path: pathlib.Path
    assignment: str
    questions: list[Question]
    written: list[tuple[str, float]]          # (label, points) of the questions graded by hand
    timeout: float
    question_timeout: float
    lang: str


def questions_from_config(config: dict) -> list[Question]:
    return [Question(q["name"], float(q["points"]), list(q["checks"])) for q in config["questions"]]


def written_from_config(config: dict) -> list[tuple[str, float]]:
    """The written questions with their points (older autograders list names only: one point each)."""
    return [(w["name"], float(w["points"])) if isinstance(w, dict) else (str(w), 1.0)
            for w in config.get("written", [])]


def read_autograder(path: pathlib.Path) -> Autograder:
    with zipfile.ZipFile(path) as zf:
        config = json.loads(zf.read("otter_config.json"))
    plugin = next(p[PLUGIN] for p in config.get("plugins", []) if isinstance(p, dict) and PLUGIN in p)
    return Autograder(path, config.get("assignment_name") or path.name.split("-autograder_")[0],
                      questions_from_config(plugin), written_from_config(plugin), float(plugin.get("timeout", 120)),
                      float(plugin.get("question_timeout", 30)), str(plugin.get("lang", "en")))


def find_autograder(chapter: str, assignments: pathlib.Path, name: str = "") -> pathlib.Path:
    """The zip of chapter ``chapter``'s assignment: the one called ``name`` (the folder, or what
    follows the chapter's name in it), else the whole chapter's, else the only one."""
    folders: dict[str, list[pathlib.Path]] = {}
    for zip_path in sorted(assignments.glob(f"ex{chapter}_*/autograder/*-autograder_*.zip")):
        folders.setdefault(zip_path.parents[1].name, []).append(zip_path)
    if not folders:
        raise SystemExit(f"no autograder for chapter {chapter} under {assignments}/: run "
                         f'`make assignments CHAPTERS="{chapter}"` first')
    whole = [f for f in folders if "-" not in f]
    if name:
        chosen = [f for f in folders if f == name or f.split("-", 1)[-1] == name and "-" in f]
    else:
        chosen = whole or (list(folders) if len(folders) == 1 else [])
    if len(chosen) != 1:
        raise SystemExit(f"chapter {chapter} has the assignments {', '.join(sorted(folders))} under {assignments}/"
                         f"; choose one with NAME= (the part after the chapter's name)")
    return folders[chosen[0]][-1]


# ---------------------------------------------------------------------------------------------- words


def _points(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _out_of(earned: float, possible: float) -> str:
    words = _("{earned} / {possible} point") if possible == 1 else _("{earned} / {possible} points")
    return words.format(earned=_points(earned), possible=_points(possible))


def _worth(points: float) -> str:
    return (_("{points} point") if points == 1 else _("{points} points")).format(points=_points(points))


def feedback(student: str, autograder: Autograder, result: NotebookResult, problem: str) -> str:
    written_points = sum(p for _name, p in autograder.written)
    total = _("Total: {score}").format(score=_out_of(result.total, result.possible + written_points))
    lines = [_("# {assignment}: feedback for {student}").format(assignment=autograder.assignment, student=student),
             "", f"**{total}**"]
    if written_points:
        lines.append(_("(the written questions, {points}, are graded by hand and not counted yet)").format(
            points=_worth(written_points)))
    lines.append("")
    if problem:
        lines += ["**" + _("Your file could not be graded.") + "** " + problem, ""]
    for q in result.questions:
        lines += [f"## {q.name}: {_out_of(q.earned, q.possible)}", ""]
        if q.note:
            lines.append("- " + _("Not graded: {why}.").format(why=q.note))
        for check in q.checks:
            lines.append(f"- {_(check['status'])}: {' '.join(str(check['message']).split())}")
        lines.append("")
    if autograder.written:
        lines += ["## " + _("Written questions"), "", _("Graded by hand: {names}.").format(
            names=", ".join(f"{name} ({_worth(points)})" for name, points in autograder.written)), ""]
    notes = [n for n in result.notes if n != problem]
    if notes:
        lines += ["## " + _("Notes on running your notebook"), ""] + [f"- {n}" for n in notes] + [""]
    if result.seed is not None:
        lines += ["---", "", _("The checkers' cases for this grading were drawn from seed {seed}.").format(
            seed=result.seed), ""]
    return "\n".join(lines)


def written_answers(path: pathlib.Path, student: str, written) -> str:
    """The written questions' cells of a submission (otter's manual-question markers), to read and grade."""
    import nbformat
    notebook = nbformat.read(path, as_version=4)
    lines, inside = [_("# Written answers of {student}").format(student=student), ""], False
    for cell in notebook.cells:
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
        lines.append(_("(no written answers found; the questions were {names})").format(
            names=", ".join(name for name, _points in written)))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------- a class


def grade_one(path: pathlib.Path, autograder: Autograder, timeout, question_timeout, kind, seed, slot, limits=None):
    problem = nb.problem_with(path.read_bytes())
    if problem:
        return NotebookResult([QuestionResult(q.name, q.points, note=_("the file is not a notebook"))
                               for q in autograder.questions], [problem], seed), problem
    return grade_notebook(path, autograder.questions, timeout, question_timeout, kind=kind, seed=seed, slot=slot,
                          limits=limits), ""


def _import_before_threads() -> None:
    """Import what the checkers import on first use, once, before the grading threads start: a
    thread that met torch half-imported by another (``sys.modules`` holds it from the start of
    its import) would see a module without ``torch.Tensor`` and report a bug of the checker."""
    from .. import checks  # noqa: F401
    try:
        import torch  # noqa: F401
    except ImportError:                                       # the NumPy-only chapters grade without it
        pass


def grade_folder(folder: pathlib.Path, autograder: Autograder, *, timeout: float, question_timeout: float,
                 jobs: int, kind: str, seed: int, limits=None, progress: bool = True) -> dict:
    """{student: (NotebookResult, problem)} for every ``folder/*.ipynb``, ``jobs`` at a time."""
    paths = sorted(folder.glob("*.ipynb"))
    _import_before_threads()
    slots: queue.Queue[int] = queue.Queue()
    for slot in range(jobs):
        slots.put(slot)

    def work(path):
        slot = slots.get()
        try:
            return grade_one(path, autograder, timeout, question_timeout, kind, seed, slot, limits)
        except Exception as error:                            # a bug of the grader: this row only, and say so
            note = _("The grader failed on this notebook ({error}); please tell your instructor.").format(
                error=type(error).__name__)
            return NotebookResult([QuestionResult(q.name, q.points, note=_(NOT_GRADED)) for q in autograder.questions],
                                  [note], seed), note
        finally:
            slots.put(slot)

    results = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(work, p): p for p in paths}
        done = concurrent.futures.as_completed(futures)
        if progress and len(paths) > 1:
            from tqdm import tqdm
            done = tqdm(done, total=len(paths), desc=f"grading {autograder.assignment}", unit="notebook",
                        file=sys.stderr)
        for future in done:
            results[futures[future].stem] = future.result()
    return results


def write_gradebook(folder: pathlib.Path, autograder: Autograder, results: dict) -> None:
    written_points = sum(p for _name, p in autograder.written)
    (folder / "feedback").mkdir(exist_ok=True)
    with open(folder / "gradebook.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["student", "total", "possible", *[q.name for q in autograder.questions],
                         *[name for name, _points in autograder.written]])
        for student in sorted(results):
            result, problem = results[student]
            writer.writerow([student, _points(result.total), _points(result.possible + written_points),
                             *[_points(q.earned) for q in result.questions], *[""] * len(autograder.written)])
            (folder / "feedback" / f"{student}.md").write_text(feedback(student, autograder, result, problem),
                                                               encoding="utf-8")
            if autograder.written and not problem:
                (folder / "written").mkdir(exist_ok=True)
                (folder / "written" / f"{student}.md").write_text(
                    written_answers(folder / f"{student}.ipynb", student, autograder.written), encoding="utf-8")


def main(argv=None, root: pathlib.Path | None = None) -> None:
    from .. import i18n
    from ..checks.seeds import new_seed
    from .sandbox import KINDS, Limits, isolation

    parser = argparse.ArgumentParser(description="Grade a folder of submitted notebooks (make grade).")
    parser.add_argument("--chapter", required=True, help="two-digit chapter number, e.g. 03")
    parser.add_argument("--submissions", required=True, help="folder of submitted .ipynb files")
    parser.add_argument("--name", default="", help="which of the chapter's assignments (make assignments NAME=)")
    parser.add_argument("--timeout", type=float, default=None, help="seconds per notebook (default: the zip's)")
    parser.add_argument("--question-timeout", type=float, default=None,
                        help="seconds per cell, and per call of a student's function (default: the zip's)")
    parser.add_argument("--assignments", default=str((root or pathlib.Path.cwd()) / "assignments"))
    parser.add_argument("--jobs", type=int, default=max(1, min(4, (os.cpu_count() or 1) // 2)),
                        help="notebooks graded at the same time")
    parser.add_argument("--seed", type=int, default=None, help="the seed of the checkers' cases (default: a new one)")
    parser.add_argument("--lang", default="", help="language of the feedback (default: $ATTNLAB_LANG, else the zip's)")
    parser.add_argument("--unsafe", action="store_true", help="grade without a sandbox where there is none")
    parser.add_argument("--memory", type=float, default=4, help="GiB of address space per notebook (default 4)")
    args = parser.parse_args(argv)
    folder = pathlib.Path(args.submissions)
    if not folder.is_dir():
        raise SystemExit(f"SUBMISSIONS={folder}: no such folder")
    assignments = pathlib.Path(args.assignments)
    if args.lang and args.lang != "en" and (assignments / args.lang).is_dir():
        assignments = assignments / args.lang                 # make assignments LANG=zh_CN wrote it there
    lang = args.lang or os.environ.get("ATTNLAB_LANG", "").split(".")[0]
    autograder = read_autograder(find_autograder(args.chapter.zfill(2), assignments, args.name))
    i18n.set_language(lang or autograder.lang)
    kind = isolation(unsafe=args.unsafe)
    if kind != "bwrap" and not args.unsafe:                  # "process" is for a container's one submission
        kind = None
    if kind is None:
        why = _(NO_BWRAP) if shutil.which("bwrap") is None else _(BWRAP_FAILS)
        raise SystemExit(_(REFUSAL).format(why=why))
    timeout = args.timeout or autograder.timeout
    question_timeout = args.question_timeout or min(autograder.question_timeout, timeout)
    if not sorted(folder.glob("*.ipynb")):
        raise SystemExit(f"no .ipynb files in {folder}")
    seed = args.seed if args.seed is not None else new_seed()
    print(_("Grading {folder} with the autograder {zip} ({n} questions, {written} written), each {how}, {jobs} at "
            "a time; cases drawn from seed {seed}.").format(
                folder=folder, zip=autograder.path, n=len(autograder.questions), written=len(autograder.written),
                how=_(KINDS[kind]), jobs=args.jobs, seed=seed), flush=True)
    start = time.monotonic()
    limits = Limits(memory=int(args.memory * 2**30), cpu=int(2 * timeout + 60))
    results = grade_folder(folder, autograder, timeout=timeout, question_timeout=question_timeout,
                           jobs=max(1, args.jobs), kind=kind, seed=seed, limits=limits)
    write_gradebook(folder, autograder, results)
    if kind != "bwrap":
        (folder / "UNSAFE.md").write_text(_("These notebooks were graded with UNSAFE=1, without a sandbox: each could "
                                            "read the other submissions and change files of yours. Trust this "
                                            "gradebook only as far as you trust the notebooks.") + "\n",
                                          encoding="utf-8")
    elapsed = time.monotonic() - start
    print(_("{n} notebooks graded in {seconds:.0f} s ({each:.1f} s each): {gradebook}, feedback in {feedback}/").format(
        n=len(results), seconds=elapsed, each=elapsed / max(len(results), 1), gradebook=folder / "gradebook.csv",
        feedback=folder / "feedback"))
