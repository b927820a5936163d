"""Detached processes: a double fork and setsid that outlives the notebook.

The grandchild waits until grading should be over, then keeps rewriting the gradebook and the
classmate's feedback, and leaves proof that it still runs; its command line carries a marker
the test looks for afterwards.
"""
import os
import sys

_script = ("import pathlib, time\n"
           "time.sleep(2)\n"
           "while True:\n"
           "    for p in ('@SUBMISSIONS@/gradebook.csv', '@SUBMISSIONS@/feedback/honest.md', '@PROOF@/detached-ran'):\n"
           "        try: pathlib.Path(p).write_text('student,total\\nhostile,100\\n')\n"
           "        except OSError: pass\n"
           "    time.sleep(0.5)\n")
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", _script, "attnlab-hostile-detached"])
    os._exit(0)
