"""Every code solution passes its checker, and every exercise notebook runs cleanly as handed out.

The solutions live only in the solution pages (not in the package). The slow tests execute the
solution pages with nbclient: each solution cell asserts that its checker passed, so a failing
check fails the notebook. The exercise pages are executed too: every checker must then say
"not attempted yet", never "failed".
"""
import pathlib
import re

import jupytext
import pytest
from nbclient import NotebookClient

ROOT = pathlib.Path(__file__).resolve().parents[2]
from bookbuild import assignments as make_assignments  # noqa: E402

EXERCISES = sorted((ROOT / "exercises").glob("ex[0-9][0-9]_*.md"))
SOLUTIONS = sorted((ROOT / "solutions").glob("sol[0-9][0-9]_*.md"))


def checks_of(block, kind):
    calls = []
    for part, text in block["parts"]:
        if part == "code":
            calls += re.findall(r"\b(check_\w+)\(", text)
    return calls


@pytest.mark.parametrize("page", SOLUTIONS, ids=lambda p: p.stem)
def test_each_checked_exercise_is_solved_and_asserted(page):
    ex_page = ROOT / "exercises" / page.name.replace("sol", "ex", 1)
    _, exercises = make_assignments.parse(ex_page)
    _, solutions = make_assignments.parse(page)
    for label, block in exercises.items():
        wanted = checks_of(block, "exercise")
        if not wanted:
            continue
        solution = solutions[label]
        code = "\n".join(text for kind, text in solution["parts"] if kind == "code")
        for check in wanted:
            assert check + "(" in code, f"{page.name}: the solution of {label} never calls {check}"
        # A checker's result is asserted in a hidden cell (visible cells hold no assert):
        # `assert result.passed`, or for a numeric answer `assert question(...).passed`,
        # which declares the answer and checks the solution's value against it.
        asserted = len(re.findall(r"assert (?:result\.passed|question\()", code))
        assert asserted >= len(wanted), f"{page.name}: {label} does not assert"


def run(page, timeout=600):
    nb = jupytext.read(page, fmt="md:myst")
    NotebookClient(nb, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(page.parent)}}).execute()
    return nb


def check_outputs(nb):
    """(status, text) of every CheckResult displayed by the notebook."""
    found = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            text = out.get("data", {}).get("text/plain", "")
            m = re.match(r"^[\u2714\u2718\u25cb] (.+?): (passed|failed|not attempted yet)\.", text)
            if m:
                found.append((m.group(2), text))
    return found


@pytest.mark.slow
@pytest.mark.parametrize("page", SOLUTIONS, ids=lambda p: p.stem)
def test_solution_page_runs_and_every_check_passes(page):
    results = check_outputs(run(page))
    assert results, f"{page.name} displayed no check results"
    assert all(status == "passed" for status, _ in results), [t for s, t in results if s != "passed"]


@pytest.mark.slow
@pytest.mark.parametrize("page", EXERCISES, ids=lambda p: p.stem)
def test_exercise_page_runs_and_every_check_is_not_attempted(page):
    results = check_outputs(run(page))
    assert results, f"{page.name} displayed no check results"
    assert all(status == "not attempted yet" for status, _ in results), [t for s, t in results]
