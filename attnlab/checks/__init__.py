"""Exercise checkers that say what went wrong.

Each ``check_*`` function runs a student's function on a battery of cases and returns a
:class:`CheckResult` (``.passed``, ``.status``, ``.message``, ``.mistake``; a green, red or grey note
in Jupyter). When the output is wrong, the checker compares it with deliberately wrong
implementations (mistake models) and names the classic mistake it matches. A stub that raises
``NotImplementedError`` is "not attempted yet"; an exception, a wrong type, dtype or shape, or a
change to an input in place becomes a message, never a traceback. ``check_answer(name, value)``
checks numeric answers. An error inside a checker itself is reported as a bug of the checker,
with the details folded away.

Time limit
----------
Every call of student code runs under a time limit, 5 s by default. Override it per call with
``check_softmax(fn, timeout=20)`` or for a whole session or grading run with the environment
variable ``ATTNLAB_CHECK_TIMEOUT`` (seconds, e.g. ``ATTNLAB_CHECK_TIMEOUT=30``); the argument
wins over the variable. Past the limit the checker returns a failed result ("ran longer than
5 s", with the usual cause), and the cell comes back. In the main thread (a Jupyter kernel, a
script, an otter-grader run) a ``SIGALRM`` timer interrupts the student's Python code; off the
main thread the call runs in a helper thread that is abandoned (and interrupted where Python can)
past the limit; one long library call that no signal can interrupt is still reported as too slow
once it returns. See :mod:`attnlab.checks.limits`.

How to add a checker
--------------------
1. Write ``attnlab/checks/<topic>.py`` (one topic, one file; :mod:`attnlab.checks.topics`
   imports every module of the package that is not machinery, so nothing else is edited). In
   it, keep each mistake model next to the explanation it produces::

       MISTAKES: list[Mistake] = []
       model = models(MISTAKES)

       @model("no_scale", "missing scaling: divide the scores by sqrt(d_k).")
       def attention_without_scale(q, k, v):
           ...                                   # the deliberately wrong implementation

       @checker("attention", MISTAKES + [OTHER])  # OTHER: a Mistake found by a property, no model
       def check_attention(run, fn):
           for case, q, k, v in cases:           # seeded inputs: same verdict on every run
               out = run.call(fn, case, q, k, v, hint=error_hint)    # time limit, copies, errors
               got = run.array(out, case, shape=(T, d_v))            # type, dtype, shape
               run.compare(case, got, reference, MISTAKES, args=(q, k, v))   # diagnosis
           return run.passed("All ... cases match ...")

   ``@checker`` registers the public ``check_attention`` (with ``timeout=``), exports it from
   this package and lists its mistakes in :data:`attnlab.checks.catalogue.CATALOGUE`; nothing is
   retyped elsewhere. ``run.fail(message, mistake_name)`` ends a run with a diagnosis found by a
   property; every message is one string built in one place, ready for translation.
2. Write ``tests/attnlab/checks/test_<topic>.py``: the reference passes, a stub is "not attempted yet",
   and each mistake name has a test calling ``assert_diagnosis(result, "<name>", ...)`` on a
   wrong function written independently (the registry test enforces this).
3. Import the checker in the exercise page and call it in the solution page.
"""
from . import topics as _topics  # noqa: F401  (registers every checker)
from .registry import REGISTRY, public_functions
from .result import CheckResult

globals().update(public_functions())

__all__ = ["CheckResult", "REGISTRY", *sorted(public_functions())]
