"""Memory, output, disk and process floods.

Six gigabytes at once, 50 MB printed, files written until the disk says no, and two hundred
processes.
"""
import os
import subprocess
import sys

try:
    _big = bytearray(6 << 30)
    _big[::4096] = b"x" * len(_big[::4096])
except MemoryError:
    pass
sys.stdout.write("x" * (50 << 20))
sys.stderr.write("y" * (10 << 20))
_n = 0
try:
    while _n < 4000:
        with open(f"flood-{_n}.bin", "wb") as _f:
            _f.write(b"z" * (1 << 20))
        _n += 1
except OSError:
    pass
_children = []
try:
    for _ in range(200):
        _children.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"]))
except OSError:
    pass
for _fd in range(3, 64):
    try:
        os.write(_fd, b"w" * (1 << 20))
    except OSError:
        pass
