"""Grade a folder of submitted notebooks: a gradebook and feedback in words (``make grade``).

    python -m bookbuild grade --chapter 03 --submissions DIR [--name NAME] [--timeout 120]
        [--question-timeout 30] [--jobs 2] [--seed N] [--memory GIB] [--lang zh_CN] [--unsafe]

The work is done by :mod:`attnlab.grading.gradebook` (see there for what it writes); each notebook
runs in its own sandbox (:mod:`attnlab.grading.sandbox`) and is checked by this process.
"""
import pathlib
import sys

from attnlab.grading.gradebook import main as _grade

ROOT = pathlib.Path(__file__).resolve().parents[1]


def main(argv=None):
    return _grade(argv, root=ROOT)


if __name__ == "__main__":
    sys.exit(main())
