"""Early exit: each cell (``# %%``) ends the notebook's process or never ends: os._exit, sys.exit,
SystemExit, SIGKILL to itself, an endless loop at the top level, and one that ignores signals.
"""
import os

os._exit(0)
# %%
import sys  # noqa: E402

sys.exit(3)
# %%
raise SystemExit("bye")
# %%
import os  # noqa: E402
import signal  # noqa: E402

os.kill(os.getpid(), signal.SIGKILL)
# %%
while True:
    pass
# %%
import signal  # noqa: E402

signal.signal(signal.SIGALRM, signal.SIG_IGN)
while True:
    pass
