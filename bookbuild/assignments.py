"""Turn chapters' exercises into otter-grader assignments (``make assignments CHAPTERS="01 03"``).

For each chosen chapter NN this reads ``exercises/exNN_*.md`` and ``solutions/solNN_*.md`` (MyST
notebooks), writes an otter-grader master notebook and runs ``otter assign`` on it:

    assignments/exNN_<name>/master/exNN_<name>.ipynb          the master (solutions + tests)
    assignments/exNN_<name>/student/exNN_<name>.ipynb         hand this out: stubs, no solutions
    assignments/exNN_<name>/autograder/exNN_<name>.ipynb      the solved notebook
    assignments/exNN_<name>/autograder/exNN_<name>-autograder_*.zip   grade with `otter run -a`

A choice of exercises or points (``--exercises``, ``--points``) gets a folder of its own,
``exNN_<name>-<NAME>`` with ``--name NAME``, else named from the chosen labels and points
(``ex03_masks-causal4-padding2``), so that building the whole chapter never replaces it.

The MyST sources are the single source of truth; nothing is maintained twice. The conversion
relies on three conventions of the exercise and solution pages:

* each exercise is a sphinx-exercise block (``exercise-start``/``exercise-end``, or ``exercise``);
  its solution is the ``solution-start`` block (or ``solution``) that names the exercise's label;
* in an exercise, a code line that starts with ``check_`` is a check; the other code of the block
  (the stub, or ``answer = ...``) is what the student edits;
* in a solution, the code before the first line that mentions ``check_`` in a cell is the
  solution; the check and its assert that follow are dropped, and so are ``glue(...)`` lines,
  which only feed numbers to the book's prose.

An exercise with at least one check becomes an autograded otter question (one point per check,
unless ``--points`` says otherwise); the others become otter manual questions, graded by hand
(``otter export`` collects their answers). The autograder zip vendors attnlab as a wheel, pins
attnlab's dependencies from requirements/lock.txt, and carries the configuration of
:mod:`attnlab.grading.otter_plugin` (questions, written questions and their points, time limits,
language), which keeps the student's code out of otter's kernel and scores it in a sandbox
(``make grade``, :mod:`bookbuild.grade`, reads the same configuration); its ``run_otter.py``, Gradescope's entry
point, is :mod:`attnlab.grading.autograder`.

    python -m bookbuild assignments [NN ...]        (no argument: every chapter)
    python -m bookbuild assignments 03 --exercises "ex-masks-causal ex-masks-padding" --points "ex-masks-causal=4"
    python -m bookbuild assignments 01 --lang zh_CN     (into assignments/zh_CN/ex01_qkv/)

``--lang zh_CN`` gives the student a Chinese notebook: the pages' markdown is translated through
their catalogs in locale/zh_CN before it is split into questions (:mod:`bookbuild.i18n.markdown`,
as ``make notebooks`` does), and a first cell sets attnlab's messages to Chinese. Code, checks and
the autograder's tests are those of the English assignment.
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import zipfile

import jupytext
import nbformat

from attnlab.grading.autograder import RUN_OTTER

from .i18n.code_text import translate as translate_code
from .i18n.code_text import translate_fenced
from .i18n.markdown import LANGUAGES, page_catalog, translate_markdown
from .notebooks import exercise_labels, jupyter_markdown, language_cell, words

ROOT = pathlib.Path(__file__).resolve().parents[1]

OTTER = pathlib.Path(sys.executable).with_name("otter")
PLUGIN = "attnlab.grading.otter_plugin.IsolatedGrading"
PYTHON_VERSION = "3.11"                               # the Python of the project's lock
AUTOGRADER_PACKAGES = ["numpy", "sympy", "torch", "matplotlib", "ipywidgets"]   # attnlab's dependencies
# Where the zip carries the attnlab wheel. Gradescope unpacks the zip into /autograder/source before
# its setup.sh installs environment.yml; otter grade's Dockerfile copies only setup.sh,
# environment.yml and requirements.* before that step (the folder's *contents*, for a folder).
# A folder named requirements.wheels holding the wheel, and a copy of itself, puts the wheel at
# ./requirements.wheels/ in both layouts.
WHEELS = "requirements.wheels"
# What this script writes into a student notebook itself, per language.
ASSIGNMENT_WORDS = {"en": {"written": "*Written question, graded by hand.*", "see": "(see the solution page)"},
                    "zh_CN": {"written": "*书面题，人工评分。*", "see": "（见解答页）"}}
# What otter assign writes into the student notebook, in the other languages.
OTTER_WORDS = {"zh_CN": {
    "_Type your answer here, replacing this text._": "_在这里写下你的答案，替换这段文字。_",
    "To double-check your work, the cell below will rerun all of the autograder tests.":
        "想再检查一遍？下面的单元格会重新运行全部自动评分测试。"}}

_START = re.compile(r":::\{(exercise|solution)-start\}[ \t]*(.*)\n((?::[\w-]+:.*\n)*):::[ \t]*(?:\n|$)")
_END = re.compile(r":::\{(exercise|solution)-end\}[ \t]*\n:::[ \t]*(?:\n|$)")
_PLAIN = re.compile(r":::\{(exercise|solution)\}[ \t]*(.*)\n((?::[\w-]+:.*\n)*)((?:.|\n)*?)^:::[ \t]*(?:\n|$)",
                    re.M)


def _label(options: str) -> str:
    match = re.search(r":label:\s*(\S+)", options)
    return match.group(1) if match else ""


def _events(path: pathlib.Path, lang: str = "en"):
    """Flatten a MyST notebook into markdown, code and exercise/solution marker events.

    For ``lang`` other than "en", each markdown cell is translated through the page's catalog first.
    """
    catalog = page_catalog(path, lang) if lang != "en" else {}
    nb = jupytext.read(path, fmt="md:myst")
    for cell in nb.cells:
        if cell.cell_type == "code":
            yield ("code", translate_code(cell.source, catalog.get))
            continue
        text = translate_fenced(translate_markdown(cell.source, catalog), catalog.get)
        while text:
            found = [(m.start(), kind, m) for kind, rx in (("start", _START), ("end", _END), ("plain", _PLAIN))
                     if (m := rx.search(text))]
            if not found:
                yield ("md", text)
                break
            pos, kind, m = min(found, key=lambda f: f[0])
            if text[:pos].strip():
                yield ("md", text[:pos])
            if kind == "start":
                yield ("start", m.group(1), m.group(2).strip(), _label(m.group(3)))
            elif kind == "end":
                yield ("end", m.group(1))
            else:
                yield ("plain", m.group(1), m.group(2).strip(), _label(m.group(3)), m.group(4))
            text = text[m.end():]


def parse(path: pathlib.Path, lang: str = "en"):
    """(intro parts, {label: block}) where a block is {"title"/"target", "parts": [(kind, text), ...]}."""
    intro, blocks, order, current = [], {}, [], None
    for event in _events(path, lang):
        if event[0] == "start":
            _, kind, arg, label = event
            key = label if kind == "exercise" else arg
            current = {"arg": arg, "label": label, "parts": []}
            blocks[key] = current
            order.append(key)
        elif event[0] == "end":
            current = None
        elif event[0] == "plain":
            _, kind, arg, label, body = event
            key = label if kind == "exercise" else arg
            blocks[key] = {"arg": arg, "label": label, "parts": [("md", body)]}
            order.append(key)
        else:
            (current["parts"] if current is not None else intro).append(event)
    return intro, {key: blocks[key] for key in order}


def split_checks(source: str):
    """(student code, check expressions) of one exercise code cell."""
    lines = source.splitlines()
    checks = [line.strip() for line in lines if line.strip().startswith("check_")]
    rest = [line for line in lines if not line.strip().startswith("check_")]
    return "\n".join(rest).strip(), checks


def solution_code(source: str) -> str:
    """The solution part of a solution code cell: everything before the first line naming check_."""
    lines = source.splitlines()
    for i, line in enumerate(lines):
        if "check_" in line:
            lines = lines[:i]
            break
    lines = [line for line in lines if not line.lstrip().startswith("glue(")]   # book-only output
    return "\n".join(lines).strip()


def _raw(text: str):
    return nbformat.v4.new_raw_cell(text)


def _config_cell(name: str, questions: list[dict], written: list[dict], timeout: float, question_timeout: float,
                 wheel: str, lang: str = "en") -> str:
    """otter's ASSIGNMENT CONFIG: exception-based tests, the sandbox plugin, and what the zip installs."""
    plugin = {"questions": questions, "written": written, "timeout": timeout, "question_timeout": question_timeout,
              "lang": lang}
    requirements = [f"./{WHEELS}/{wheel}", *pinned_requirements()]
    return ("# ASSIGNMENT CONFIG\n"
            f"name: {name}\n"
            "init_cell: true\n"
            "check_all_cell: true\n"
            "export_cell: false\n"
            "run_tests: true\n"
            "solutions_pdf: false\n"
            "template_pdf: false\n"
            f"requirements: {json.dumps(requirements)}\n"
            "overwrite_requirements: true\n"
            f"python_version: '{PYTHON_VERSION}'\n"
            "generate:\n"
            "  pdf: false\n"
            "  show_stdout: true\n"
            f"  plugins: [{json.dumps({PLUGIN: plugin})}]\n"
            "tests:\n"
            "  files: false\n"
            "  ok_format: false\n")


def pinned_requirements() -> list[str]:
    """otter-grader and attnlab's dependencies, pinned as in requirements/lock.txt."""
    lock = {}
    for line in (ROOT / "requirements" / "lock.txt").read_text().splitlines():
        name, sep, version = line.strip().partition("==")
        if sep:
            lock[name.lower()] = version
    return ([f"otter-grader[grading]=={lock['otter-grader']}"]
            + [f"{name}=={lock[name]}" for name in ["ipykernel", *AUTOGRADER_PACKAGES]])


def test_cell(label: str, index: int, check: str) -> str:
    """An exception-based otter test: the check's diagnosis in words when it fails."""
    call = ast.parse(check, mode="eval").body
    names = [a.id for a in [*call.args, *(k.value for k in call.keywords)] if isinstance(a, ast.Name)]
    function = "test_" + re.sub(r"\W", "_", label) + f"_{index}"
    return (f"def {function}({', '.join(dict.fromkeys(names))}):\n"
            f"    from attnlab.checks import {call.func.id}\n"
            f"    from attnlab.grading.student import require\n"
            f"    require({check})")


def master_notebook(exercise_page: pathlib.Path, solution_page: pathlib.Path, chosen=None, points=None,
                    timeout: float = 120, question_timeout: float = 30,
                    wheel: str = "attnlab-0.1.0-py3-none-any.whl", lang: str = "en",
                    name: str = "") -> nbformat.NotebookNode:
    """otter's master notebook for one chapter.

    ``chosen``: the exercise labels to assign (default: all); ``points``: {label: points}
    (default: one point per check of an autograded exercise, one point for a written one);
    ``lang``: the language of the markdown ("en", or "zh_CN" from the pages' catalogs);
    ``name``: the assignment's name (default: the exercise page's, e.g. "ex03_masks").
    """
    name, w = name or exercise_page.stem, words(lang)
    labels = exercise_labels(exercise_page.parent, lang)       # "Exercise 3.2", as the page numbers it
    intro, exercises = parse(exercise_page, lang)
    _, solutions = parse(solution_page, lang)
    points = dict(points or {})
    unknown = sorted(set(chosen or []) - set(exercises)) + sorted(set(points) - set(exercises))
    if unknown:
        raise SystemExit(f"{exercise_page.name} has no exercise {', '.join(unknown)}; its exercises are "
                         f"{', '.join(exercises)}")
    cells, questions, written = [], [], []
    for kind, text in intro:
        if kind == "md":
            cells.append(nbformat.v4.new_markdown_cell(jupyter_markdown(text, lang=lang, labels=labels).rstrip()))
        else:
            cells.append(nbformat.v4.new_code_cell(text))
    for label, block in exercises.items():
        if chosen and label not in chosen:
            continue
        title = block["arg"] or label
        heading = w["heading"].format(kind=labels.get(label, w["exercise"]), title=title)
        statement, prompts, checks = [heading], [], []
        for kind, text in block["parts"]:
            if kind == "md":
                statement.append(jupyter_markdown(text, lang=lang, labels=labels).rstrip())
            else:
                code, found = split_checks(text)
                if code:
                    prompts.append(code)
                checks += found
        statement_md = "\n\n".join(s for s in statement if s.strip())
        solution = solutions.get(label)
        if solution is None:
            raise SystemExit(f"{solution_page}: no solution block for exercise {label!r}")
        if not checks:
            cells += written_question(label, statement_md, prompts, solution, points.get(label, 1), lang, labels)
            written.append({"name": label, "points": points.get(label, 1)})
            continue
        code = [solution_code(text) for kind, text in solution["parts"] if kind == "code"]
        code = [c for c in code if c]
        if not code:
            raise SystemExit(f"{solution_page}: the solution of {label!r} has no code before its check")
        worth = points.get(label, len(checks))
        questions.append({"name": label, "points": worth, "checks": checks})
        cells.append(_raw(f"# BEGIN QUESTION\nname: {label}\npoints: {worth}"))
        cells.append(nbformat.v4.new_markdown_cell(statement_md))
        cells.append(_raw("# BEGIN PROMPT"))
        cells += [nbformat.v4.new_code_cell(p) for p in prompts]
        cells.append(_raw("# END PROMPT"))
        cells.append(_raw("# BEGIN SOLUTION"))
        cells += [nbformat.v4.new_code_cell(f"# BEGIN SOLUTION NO PROMPT\n{c}\n# END SOLUTION") for c in code]
        cells.append(_raw("# END SOLUTION"))
        cells.append(_raw("# BEGIN TESTS"))
        cells += [nbformat.v4.new_code_cell(test_cell(label, i + 1, check)) for i, check in enumerate(checks)]
        cells.append(_raw("# END TESTS"))
        cells.append(_raw("# END QUESTION"))
    if lang != "en":
        cells.insert(0, language_cell(lang))
    cells.insert(0, _raw(_config_cell(name, questions, written, timeout, question_timeout, wheel, lang)))
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    return nb


def written_question(label: str, statement_md: str, prompts: list[str], solution: dict, worth: float,
                     lang: str = "en", labels: dict | None = None) -> list:
    """A manual otter question: the answer cell is exported for grading by hand (``otter export``)."""
    said = ASSIGNMENT_WORDS[lang]
    answer = "\n\n".join(jupyter_markdown(text, lang=lang, labels=labels).rstrip()
                         for kind, text in solution["parts"] if kind == "md")
    cells = [_raw(f"# BEGIN QUESTION\nname: {label}\nmanual: true\npoints: {worth}"),
             nbformat.v4.new_markdown_cell(statement_md + "\n\n" + said["written"])]
    cells += [nbformat.v4.new_code_cell(p) for p in prompts]
    cells += [_raw("# BEGIN SOLUTION"), nbformat.v4.new_markdown_cell(answer.strip() or said["see"]),
              _raw("# END SOLUTION"), _raw("# END QUESTION")]
    return cells


def pages_for(chapter: str):
    exercise = sorted((ROOT / "exercises").glob(f"ex{chapter}_*.md"))
    solution = sorted((ROOT / "solutions").glob(f"sol{chapter}_*.md"))
    if len(exercise) != 1 or len(solution) != 1:
        raise SystemExit(f"chapter {chapter!r}: expected one exercises/ex{chapter}_*.md and one "
                         f"solutions/sol{chapter}_*.md, found {len(exercise)} and {len(solution)}")
    return exercise[0], solution[0]


def build_wheel(out: pathlib.Path) -> pathlib.Path:
    """attnlab as a wheel (the package only, no solutions), vendored into every autograder zip."""
    out.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "--quiet", "-w", str(out)],
                          capture_output=True, text=True)
    wheels = sorted(out.glob("attnlab-*.whl"))
    if done.returncode != 0 or not wheels:
        raise SystemExit(f"could not build the attnlab wheel:\n{done.stdout}\n{done.stderr}")
    return wheels[-1]


def assignment_name(exercise: pathlib.Path, chosen=None, points=None, name: str = "") -> str:
    """The folder (and otter name) of an assignment: the page's stem for the whole chapter as it is;
    for a choice of exercises or points, the stem and NAME, or the exercises' labels (without the
    chapter's common prefix), each with its points where they were given: ex03_masks-causal4-padding2."""
    stem = exercise.stem
    if name:
        if not re.fullmatch(r"[\w.]+(?:-[\w.]+)*", name):
            raise SystemExit(f"NAME={name!r}: use letters, digits, '.', '_' and '-' only")
        return f"{stem}-{name}"
    if not chosen and not points:
        return stem
    _, exercises = parse(exercise)
    labels = [label for label in exercises if not chosen or label in chosen]
    prefix = os.path.commonprefix(list(exercises))
    prefix = prefix[:prefix.rfind("-") + 1]
    parts = [label.removeprefix(prefix) + (f"{points[label]:g}" if label in (points or {}) else "") for label in labels]
    return f"{stem}-{'-'.join(parts)}"


def make_assignment(chapter: str, out: pathlib.Path, run_tests: bool = True, chosen=None, points=None,
                    timeout: float = 120, question_timeout: float = 30, wheel: pathlib.Path | None = None,
                    lang: str = "en", name: str = "") -> pathlib.Path:
    exercise, solution = pages_for(chapter)
    folder = assignment_name(exercise, chosen, points, name)
    target = out / folder
    if target.exists():
        shutil.rmtree(target)
    (target / "master").mkdir(parents=True)
    wheel = wheel or build_wheel(out / ".wheel")
    master = target / "master" / f"{exercise.stem}.ipynb"
    nbformat.write(master_notebook(exercise, solution, chosen, points, timeout, question_timeout, wheel.name, lang,
                                   folder), master)
    command = [str(OTTER), "assign", str(master), str(target)] + ([] if run_tests else ["--no-run-tests"])
    done = subprocess.run(command, cwd=target / "master", capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"otter assign failed for {exercise.name}:\n{done.stdout}\n{done.stderr}")
    _tidy_student_notebook(target / "student" / f"{exercise.stem}.ipynb", lang)
    for autograder in (target / "autograder").glob("*-autograder_*.zip"):
        _finish_zip(autograder, wheel)
    print(f"{folder}: student notebook {target / 'student'}, autograder {target / 'autograder'}")
    return target


def _finish_zip(path: pathlib.Path, wheel: pathlib.Path) -> None:
    """Vendor the attnlab wheel into the zip, and make its run_otter.py attnlab's bounded entry point
    (attnlab.grading.autograder: a file that is not a notebook, or an otter run that fails, still
    gets a results file)."""
    with zipfile.ZipFile(path) as zf:
        entries = [(info, zf.read(info)) for info in zf.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for info, data in entries:
            zf.writestr(info, RUN_OTTER if info.filename == "run_otter.py" else data)
        for folder in (WHEELS, f"{WHEELS}/{WHEELS}"):
            zf.write(wheel, f"{folder}/{wheel.name}")


def _tidy_student_notebook(path: pathlib.Path, lang: str = "en") -> None:
    """otter leaves an empty answer cell where each solution cell was; drop those. In a language
    other than English, otter's own sentences are translated too."""
    nb = nbformat.read(path, as_version=4)
    nb.cells = [c for c in nb.cells if c.cell_type != "code" or c.source.strip()]
    for cell in nb.cells:
        for english, translated in OTTER_WORDS.get(lang, {}).items():
            if cell.cell_type == "markdown":
                cell.source = cell.source.replace(english, translated)
    nbformat.write(nb, path)


def parse_points(text: str) -> dict[str, float]:
    """``"ex-masks-causal=4 ex-masks-padding=2"`` -> {label: points}."""
    out = {}
    for item in text.split():
        label, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"POINTS: expected label=points, got {item!r}")
        try:
            out[label] = float(value)
        except ValueError:
            raise SystemExit(f"POINTS: {value!r} (for {label}) is not a number") from None
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="*", help="two-digit chapter numbers (default: all)")
    parser.add_argument("--out", help="output folder (default: assignments/, assignments/zh_CN/ for --lang zh_CN)")
    parser.add_argument("--lang", default="en", choices=["en", *LANGUAGES],
                        help="language of the student notebook (default: en; zh_CN from locale/zh_CN)")
    parser.add_argument("--no-run-tests", action="store_true", help="skip otter's check of the solutions")
    parser.add_argument("--exercises", default="", help="labels of the exercises to assign (default: all)")
    parser.add_argument("--points", default="", help='points per exercise: "ex-masks-causal=4 ex-masks-padding=2"')
    parser.add_argument("--name", default="", help="name of a choice of exercises (default: from their labels)")
    parser.add_argument("--timeout", type=float, default=120, help="seconds for a whole notebook when grading")
    parser.add_argument("--question-timeout", type=float, default=30, help="seconds for one cell or question")
    args = parser.parse_args(argv)
    chapters = args.chapters or sorted(p.stem[2:4] for p in (ROOT / "exercises").glob("ex[0-9][0-9]_*.md"))
    chosen, points = args.exercises.split() or None, parse_points(args.points)
    if (chosen or points or args.name) and len(chapters) != 1:
        raise SystemExit("EXERCISES, POINTS and NAME name one chapter's exercises: give exactly one chapter")
    out = pathlib.Path(args.out or ROOT / "assignments" / ("" if args.lang == "en" else args.lang))
    wheel = build_wheel(out / ".wheel")
    return [make_assignment(c.zfill(2), out, not args.no_run_tests, chosen, points, args.timeout,
                            args.question_timeout, wheel, args.lang, args.name) for c in chapters]


if __name__ == "__main__":
    main()
