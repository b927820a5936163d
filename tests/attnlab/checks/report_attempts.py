"""Sort the messages of the wrong-attempt suite into good, vague, misleading (and missed), per sheet.

    .venv/bin/python -m tests.attnlab.checks.report_attempts       (from the root: this checkout's checkers)

with another checkout's checkers, from outside both (the current folder would come first on the path):

    cd /tmp && PYTHONPATH=/path/to/other:$OLDPWD $OLDPWD/.venv/bin/python -m tests.attnlab.checks.report_attempts

runs every ``test_attempts_exNN.py`` with the assertions turned off, so that the same attempts can be
measured against another version of the checkers (the second form), and prints one line per sheet.
"""
import collections
import importlib
import pathlib
import sys

from tests.attnlab.checks import attempts

HERE = pathlib.Path(__file__).resolve().parent


def run_all():
    def record_only(checker, fn, exercise, what, mistake, fragment, judged="", **options):
        try:
            result = checker(fn, **options)
        except Exception as err:        # an older checker may not take an option
            print(f"  {exercise}: {what}: {type(err).__name__}: {err}")
            return
        attempts.RECORD.append((attempts.Attempt(exercise, what, mistake, fragment, judged), result))

    for path in sorted(HERE.glob("test_attempts_ex*.py")):
        module = importlib.import_module(f"tests.attnlab.checks.{path.stem}")
        module.expect = record_only
        for name in sorted(dir(module)):
            if name.startswith("test_"):
                getattr(module, name)()


def main():
    import attnlab
    print("checkers from", pathlib.Path(attnlab.__file__).parent)
    run_all()
    table = collections.defaultdict(collections.Counter)
    for attempt, result in attempts.RECORD:
        kind = attempts.classify(attempt, result)
        table[attempt.exercise.split(".")[0]][kind] += 1
        table["all"][kind] += 1
        if "-v" in sys.argv and kind != "good":
            print(f"  {kind:10s} {attempt.exercise}: {attempt.what}: {result.message.splitlines()[-1][:110]}")
    kinds = ("good", "vague", "misleading", "missed")
    for sheet in sorted(table, key=lambda s: (s == "all", s.zfill(3))):
        counts = table[sheet]
        total = sum(counts.values())
        shares = "  ".join(f"{k} {counts[k]:3d} ({counts[k] / total:4.0%})" for k in kinds)
        print(f"sheet {sheet:>3s}: {total:3d} attempts  {shares}")


if __name__ == "__main__":
    main()
