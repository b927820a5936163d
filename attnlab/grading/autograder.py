"""Gradescope's and ``otter grade``'s entry point in the autograder zip: otter's run, bounded.

Gradescope (and the Docker image of ``otter grade``) runs ``/autograder/run_autograder``, which
runs the zip's ``run_otter.py``; ``make assignments`` writes one that calls :func:`main`:

1. A submission that is not a notebook (empty, not JSON, not an .ipynb) gets zero for every
   question and a results file that says why; otter is not started (it stops with a traceback
   on such a file, before any plugin runs).
2. Otherwise otter's own run (with :mod:`.otter_plugin`) runs in a child process, under a time
   limit of twice the notebook's plus ten minutes (a kernel to start, a conda environment).
3. If that run fails, hangs or leaves no valid ``results.json``, the results are written here
   from :func:`attnlab.grading.grade_notebook` itself: zero for what was not finished, a note, never
   a traceback.

``python -m attnlab.grading.autograder DIR`` does the same on a folder laid out as Gradescope's
``/autograder`` (``source/`` the unzipped autograder, ``submission/``, ``results/``).
"""
from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys

from ..i18n import N_

PLUGIN = "attnlab.grading.otter_plugin.IsolatedGrading"
NO_NOTEBOOK = N_("No single .ipynb file was submitted.")
RUN_OTTER = '''"""Runs the autograder through attnlab's bounded entry point (attnlab.grading.autograder)."""
from attnlab.grading.autograder import main

if __name__ == "__main__":
    main("/autograder")
'''


def _plugin_config(source: pathlib.Path) -> dict:
    config = json.loads((source / "otter_config.json").read_text())
    return next(p[PLUGIN] for p in config.get("plugins", []) if isinstance(p, dict) and PLUGIN in p)


def results_json(outcome, notes) -> dict:
    """Gradescope's results format: one test per question."""
    from ..i18n import _
    tests = []
    for q in outcome.questions:
        lines = [f"{_(c['status'])}: {c['message']}" for c in q.checks] or [q.note]
        tests.append({"name": q.name, "score": q.earned, "max_score": q.possible, "output": "\n".join(lines),
                      "visibility": "visible"})
    return {"score": outcome.total, "tests": tests, "output": "\n".join(notes), "stdout_visibility": "hidden"}


def _valid(path: pathlib.Path) -> bool:
    try:
        return isinstance(json.loads(path.read_text()).get("tests"), list)
    except (OSError, ValueError, AttributeError):
        return False


def main(autograder_dir: str = "/autograder") -> None:
    from ..i18n import _
    from . import notebook as nb
    from .gradebook import questions_from_config
    from .otter_plugin import grade, language
    from .supervisor import NotebookResult, QuestionResult

    root = pathlib.Path(autograder_dir)
    results = root / "results" / "results.json"
    results.parent.mkdir(parents=True, exist_ok=True)
    config = _plugin_config(root / "source")
    found = sorted((root / "submission").glob("*.ipynb"))
    problem = "" if len(found) == 1 else NO_NOTEBOOK
    with language(config):
        problem = problem or nb.problem_with(found[0].read_bytes())
    if problem:
        with language(config):
            outcome = NotebookResult([QuestionResult(q.name, q.points, note=_("the file is not a notebook"))
                                      for q in questions_from_config(config)], [_(problem)])
            results.write_text(json.dumps(results_json(outcome, outcome.notes), indent=2))
        return
    limit = 2 * float(config.get("timeout", 120)) + 600
    command = [sys.executable, "-c", "import sys; from otter.run.run_autograder import main; main(sys.argv[1])",
               str(root)]
    process = subprocess.Popen(command, start_new_session=True)
    try:
        ok = process.wait(timeout=limit) == 0
    except subprocess.TimeoutExpired:
        ok = False
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)               # the kernel too, whatever it was doing
        except (ProcessLookupError, PermissionError):
            pass
        process.wait()
    if ok and _valid(results):
        return
    with language(config):
        outcome, notes = grade(found[0], config)
        notes = [_("otter's own run did not finish; these scores come from attnlab's grading alone."), *notes]
        results.write_text(json.dumps(results_json(outcome, notes), indent=2))


if __name__ == "__main__":
    main(*sys.argv[1:2])
