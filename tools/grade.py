"""Grade a folder of submitted notebooks: a gradebook and feedback in words (``make grade``).

    python tools/grade.py --chapter 03 --submissions DIR [--name NAME] [--timeout 120]
        [--question-timeout 30] [--jobs 2] [--seed N] [--lang zh_CN] [--unsafe]

The work is done by :mod:`attnlab.grading.gradebook` (see there for what it writes); each notebook
runs in its own sandbox (:mod:`attnlab.grading.sandbox`) and is checked by this process.
"""
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from attnlab.grading.gradebook import main  # noqa: E402

if __name__ == "__main__":
    main(root=ROOT)
