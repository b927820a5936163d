"""make grade on a class of 30 chapter-3 notebooks: seconds per notebook and the peak memory.

    .venv/bin/python -m benchmarks.grading [--jobs 2] [--unsafe]

Builds chapter 3's assignment, writes the class of ``tests/attnlab/grading/classroom.py`` (each
question right, wrong or blank), grades it as ``make grade`` does (each notebook in its sandbox,
``--unsafe`` in a bare process, to compare) and prints the wall time per notebook, the largest
resident memory of any process of the run, and whether every gradebook row has the marks the
class's choices give. Run it on a quiet machine; the figures are a ratio to compare, not a promise.
"""
from __future__ import annotations

import argparse
import csv
import pathlib
import resource
import subprocess
import sys
import tempfile
import time

from bookbuild import assignments
from tests.attnlab.grading.classroom import expected_marks, write_class

ROOT = pathlib.Path(__file__).resolve().parents[1]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--unsafe", action="store_true", help="grade in bare processes (no bubblewrap)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        assignment = assignments.make_assignment("03", tmp / "assignments", run_tests=False,
                                                 wheel=assignments.build_wheel(tmp / "wheel"))
        folder = tmp / "class"
        students = write_class(assignment, folder)
        command = [sys.executable, "-m", "bookbuild", "grade", "--chapter", "03", "--submissions", str(folder),
                   "--assignments", str(tmp / "assignments"), "--jobs", str(args.jobs)]
        start = time.perf_counter()
        done = subprocess.run(command + (["--unsafe"] if args.unsafe else []), cwd=ROOT, capture_output=True,
                              text=True)
        seconds = time.perf_counter() - start
        if done.returncode != 0:
            print(done.stdout[-2000:], done.stderr[-2000:])
            return 1
        rows = {r["student"]: r for r in csv.DictReader(open(folder / "gradebook.csv"))}
        wrong = [s for s, choices in students.items()
                 if any(float(rows[s][q]) != m for q, m in expected_marks(choices).items())]
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"{len(rows)} notebooks, jobs={args.jobs}, {'bare processes' if args.unsafe else 'sandboxes'}: "
          f"{seconds:.1f} s in all, {seconds / len(rows):.2f} s per notebook; largest process {peak_mib:.0f} MiB; "
          f"rows with marks other than the choices give: {len(wrong)}")
    return 0 if not wrong else 1


if __name__ == "__main__":
    sys.exit(main())
