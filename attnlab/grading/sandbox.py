"""Where a student's notebook runs: its own bubblewrap sandbox, or a bare process where there is none.

:func:`launch` starts ``python -I -c BOOTSTRAP`` (which serves :mod:`.untrusted`) and returns the
process with the grader's ends of its channel. Three kinds, chosen by :func:`isolation`:

``"bwrap"`` (Linux with bubblewrap, Debian package ``bubblewrap``): the process sees /usr, the
    interpreter, the virtual environment and the attnlab package, all read-only; its own /proc
    and /dev; a private /tmp (a tmpfs of ``Limits.tmp`` bytes) holding only a copy of the
    notebook. Not the checkout, the solutions, the submissions folder, the home folder or the
    grader's environment variables. ``--unshare-all`` gives it its own user, PID, IPC, UTS,
    cgroup and network namespaces (no network), ``--new-session`` no terminal to inject into,
    ``--die-with-parent`` no life after the grader; when it ends, its PID namespace ends, and with
    it every process it started, detached or not. As root, the folders are first bound into a
    private mount namespace at a staging folder (``unshare``, util-linux), and ``setpriv`` runs
    bubblewrap as an unprivileged user of its own (root's processes are exempt from the limit
    on processes).
``"process"`` (no bubblewrap, as root: a Gradescope or Docker container): a plain process run
    as that unprivileged user (``setpriv``), in a new session, in a private folder; afterwards
    every process of that user is killed. It can read what the container holds, not write it.
``"unsafe"`` (no bubblewrap, not root): a plain process in a new session; it can do anything the
    grader can. ``make grade`` refuses it unless ``UNSAFE=1``.

In all three the bootstrap sets the rlimits before the student's first line: address space
(``Limits.memory``, 4 GiB), CPU seconds, processes (not in "unsafe", where the count is the
user's), file size and open files.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile

from ..i18n import N_

UID = 1_999_000_000                  # the sandboxes' own users when grading as root: UID + slot
BOOTSTRAP = """\
import json, resource, sys
config = json.loads(sys.argv[1])
for name, value in config["rlimits"].items():
    resource.setrlimit(getattr(resource, name), (value, value))
if config["path"]:  # python -I ignores PYTHONPATH: the folder that holds attnlab comes in the config
    sys.path.insert(0, config["path"])
from attnlab.grading.untrusted import main
main(config["read"], config["write"])
"""
STAGE = 'while [ "$1" != -- ]; do mount --rbind "$1" "$2" || exit 126; shift 2; done; shift; exec "$@"'
ETC = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/alternatives")
PACKAGE_PARENT = "/opt/attnlab"
KINDS = {"bwrap": N_("in a bubblewrap sandbox"),
         "process": N_("in a process of its own user, without bubblewrap"),
         "unsafe": N_("in a plain process, WITHOUT a sandbox (UNSAFE)")}


@dataclasses.dataclass(frozen=True)
class Limits:
    memory: int = 4 << 30            # bytes of address space
    cpu: int = 600                   # CPU seconds of the whole process
    processes: int = 64              # processes and threads (bwrap and process kinds)
    file_size: int = 64 << 20        # bytes of one written file
    open_files: int = 256
    tmp: int = 256 << 20             # bytes of the private /tmp (bwrap)
    threads: int = 2                 # threads of NumPy's and torch's thread pools


@dataclasses.dataclass
class Launched:
    process: subprocess.Popen
    to_student: int                  # the grader writes requests here
    from_student: int                # and reads replies here
    cleanup: list                    # callables run by stop()
    uid: int | None = None           # the sandbox's user on this machine, where it has one

    def stop(self) -> None:
        """Kill the process and everything it started, and close the channel."""
        for kill in (lambda: os.killpg(self.process.pid, signal.SIGKILL), self.process.kill):
            try:
                kill()
            except (ProcessLookupError, PermissionError):
                pass
        self.process.wait()
        if self.uid is not None:
            kill_user(self.uid)
        for fd in (self.to_student, self.from_student):
            try:
                os.close(fd)
            except OSError:
                pass
        for step in self.cleanup:
            step()


def kill_user(uid: int) -> None:
    """SIGKILL every process of ``uid`` (a sandbox's own user), until none is left."""
    for _ in range(50):
        found = False
        for entry in pathlib.Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and entry.stat().st_uid == uid:
                    found = True
                    os.kill(int(entry.name), signal.SIGKILL)
            except (OSError, ValueError):
                continue
        if not found:
            return


def _package_dir() -> pathlib.Path:
    import attnlab
    return pathlib.Path(attnlab.__file__).resolve().parent


def _read_only_paths() -> list[tuple[str, str]]:
    """(host path, sandbox path) of the folders the student's Python needs."""
    prefixes = []
    for prefix in (sys.base_prefix, sys.base_exec_prefix, sys.prefix, sys.exec_prefix):
        path = os.path.realpath(prefix)
        if os.path.isdir(path) and not path.startswith("/usr") and (path, path) not in prefixes:
            prefixes.append((path, path))
            if os.path.abspath(prefix) != path:             # a venv reached through a link
                prefixes.append((path, os.path.abspath(prefix)))
    package = str(_package_dir())
    if not any(package.startswith(host + os.sep) for host, _ in prefixes):
        prefixes.append((package, f"{PACKAGE_PARENT}/attnlab"))
    return prefixes


def _package_path() -> str:
    package = str(_package_dir())
    inside = any(package.startswith(os.path.realpath(p) + os.sep)
                 for p in (sys.base_prefix, sys.prefix) if not os.path.realpath(p).startswith("/usr"))
    return "" if inside or package.startswith("/usr") else PACKAGE_PARENT


def _closed_folders() -> list[pathlib.Path]:
    """The folders above the interpreter, the environment and attnlab that other users may not enter."""
    import stat
    closed = []
    for start in (sys.executable, sys.base_prefix, sys.prefix, str(_package_dir())):
        path = pathlib.Path(os.path.realpath(start))
        closed += [f for f in [path, *path.parents] if f.is_dir() and not f.stat().st_mode & stat.S_IXOTH]
    return list(dict.fromkeys(closed))


def _may_read_search() -> bool:
    """Whether this process may hand CAP_DAC_READ_SEARCH on (Docker's default set lacks it)."""
    for line in pathlib.Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapBnd:"):
            return bool(int(line.split()[1], 16) & (1 << 2))
    return False


def _reach_interpreter() -> list[str]:
    """setpriv's options that let the sandbox's user reach an interpreter in a private home (/root/...):
    a capability to read, where this root may grant it; in Gradescope's or otter's grading container
    (it has /autograder) the folders on the way get o+x (enter, not list); else none (the probe fails)."""
    closed = _closed_folders()
    if not closed:
        return []
    if _may_read_search():
        return ["--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search"]
    if os.path.isdir("/autograder"):
        for folder in closed:
            folder.chmod(folder.stat().st_mode | 0o001)
    return []


def _environment(limits: Limits, home: str) -> dict[str, str]:
    threads = str(limits.threads)
    return {"PATH": f"{os.path.abspath(os.path.dirname(sys.executable))}:/usr/local/bin:/usr/bin:/bin",
            "HOME": home, "TMPDIR": home, "USER": "student", "LANG": "C.UTF-8", "MPLBACKEND": "Agg",
            "MPLCONFIGDIR": f"{home}/.matplotlib", "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1",
            "OMP_NUM_THREADS": threads, "OPENBLAS_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}


def _rlimits(limits: Limits, kind: str) -> dict[str, int]:
    out = {"RLIMIT_AS": limits.memory, "RLIMIT_CPU": limits.cpu, "RLIMIT_FSIZE": limits.file_size,
           "RLIMIT_NOFILE": limits.open_files, "RLIMIT_CORE": 0}
    if kind != "unsafe":
        out["RLIMIT_NPROC"] = limits.processes
    return out


def _bwrap_arguments(limits: Limits, notebook_fd: int, name: str, mounts) -> list[str]:
    args = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    for path in ETC:
        args += ["--ro-bind-try", path, path]
    args += ["--proc", "/proc", "--dev", "/dev", "--size", str(limits.tmp), "--tmpfs", "/tmp"]
    for source, target in mounts:                             # after /tmp: a venv may live under /tmp
        args += ["--ro-bind", source, target]
    args += ["--file", str(notebook_fd), f"/tmp/{name}", "--chdir", "/tmp", "--clearenv"]
    for key, value in _environment(limits, "/tmp").items():
        args += ["--setenv", key, value]
    return args + ["--"]


def launch(kind: str, notebook: bytes, name: str, limits: Limits = Limits(), slot: int = 0) -> Launched:
    """Start the student's process of ``kind`` ("bwrap", "process" or "unsafe") for one notebook."""
    to_child, to_student = os.pipe()
    from_student, from_child = os.pipe()
    config = {"rlimits": _rlimits(limits, kind), "path": _package_path(), "read": to_child, "write": from_child}
    python = [sys.executable, "-I", "-B", "-c", BOOTSTRAP, json.dumps(config)]
    work = tempfile.mkdtemp(prefix="attnlab-student-")
    cleanup = [functools.partial(shutil.rmtree, work, ignore_errors=True)]
    root = os.geteuid() == 0
    uid = UID + slot if root else None
    passed = [to_child, from_child]
    if kind == "bwrap":
        copy = pathlib.Path(work, "notebook")
        copy.write_bytes(notebook)
        notebook_fd = os.open(copy, os.O_RDONLY)
        passed.append(notebook_fd)
        mounts = _read_only_paths()
        if root:
            os.chmod(work, 0o755)
            stage = [(source, os.path.join(work, f"stage{i}"), target) for i, (source, target) in enumerate(mounts)]
            for _, staged, _ in stage:
                os.mkdir(staged)
            argv = ["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", STAGE, "sh"]
            argv += [p for source, staged, _ in stage for p in (source, staged)]
            argv += ["--", "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]
            argv += _bwrap_arguments(limits, notebook_fd, name, [(staged, t) for _, staged, t in stage]) + python
        else:
            argv = _bwrap_arguments(limits, notebook_fd, name, mounts) + python
        env, cwd = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, work
    else:
        home = os.path.join(work, "home")
        os.mkdir(home)
        pathlib.Path(home, name).write_bytes(notebook)
        argv, env, cwd = python, _environment(limits, home), home
        if root and kind == "process":
            for path in (work, home, os.path.join(home, name)):
                os.chown(path, uid, uid)
            argv = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *_reach_interpreter(), "--"]
            argv += python
        else:
            uid = None
    try:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, pass_fds=passed, cwd=cwd, env=env,
                                   start_new_session=True)
    finally:
        for fd in passed:
            os.close(fd)
    return Launched(process, to_student, from_student, cleanup, uid if kind == "process" else None)


@functools.lru_cache(maxsize=None)
def works(kind: str) -> bool:
    """Whether a sandbox of ``kind`` starts here and answers (tried once per process)."""
    if kind == "bwrap" and shutil.which("bwrap") is None:
        return False
    if os.geteuid() == 0 and any(shutil.which(tool) is None for tool in ("setpriv", "unshare")):
        return False
    from . import wire
    launched = launch(kind, b"{}", "probe.ipynb", Limits(cpu=60))
    try:
        wire.write_message(launched.to_student, {"op": "cell", "source": "pass", "id": 0})
        reader = wire.Reader(launched.from_student)
        import time
        header, _ = reader.read(time.monotonic() + 60)
        return header.get("ok") is True
    except (wire.ChannelError, OSError):
        return False
    finally:
        launched.stop()


def isolation(unsafe: bool = False) -> str | None:
    """The best kind this machine offers: "bwrap", then "process" (as root); "unsafe" only if allowed.

    ``$ATTNLAB_SANDBOX`` ("bwrap", "process" or "unsafe") asks for one kind, where it works: the
    tests use it to try the kinds a Gradescope container gets.
    """
    wanted = os.environ.get("ATTNLAB_SANDBOX", "")
    if wanted in KINDS and (wanted != "unsafe" or unsafe) and (wanted == "unsafe" or works(wanted)):
        return wanted
    if works("bwrap"):
        return "bwrap"
    if os.geteuid() == 0 and shutil.which("setpriv") and works("process"):
        return "process"
    return "unsafe" if unsafe else None
