"""What of a student's text may reach their feedback: no path of the grading machine, no name of
its environment variables, and of an error message one short line.

A student's exception text, a type's name, a string their function returned: each crosses from
their process as data, and a checker may quote it ("your function raised ValueError: ...").
Before it can, :func:`scrub` cuts it to its first line of at most 160 characters and replaces
every path (``/work/course/solutions/...``, ``~/...``) by ``<path>`` and every name of the
grader's environment variables (and every ``$NAME``) by ``<name>``; :func:`scrub_text` does the
replacing only, for values.
"""
from __future__ import annotations

import functools
import os
import re

PATH = re.compile(r"(?<![\w.>])(?:~|\.{1,2})?(?:[/\\][\w.@+=:-]+){2,}[/\\]?")
REFERENCE = re.compile(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|%[A-Za-z_][A-Za-z0-9_]*%")
LINE = 160


@functools.lru_cache(maxsize=1)
def _names() -> re.Pattern | None:
    names = sorted((n for n in os.environ if len(n) >= 3 and re.fullmatch(r"\w+", n)), key=len, reverse=True)
    return re.compile(r"\b(?:" + "|".join(map(re.escape, names)) + r")\b") if names else None


def scrub_text(text: str) -> str:
    """``text`` with paths and environment variable names replaced."""
    text = PATH.sub("<path>", str(text))
    text = REFERENCE.sub("<name>", text)
    names = _names()
    return names.sub("<name>", text) if names is not None else text


def scrub(text: str, limit: int = LINE) -> str:
    """The first line of ``text``, scrubbed (:func:`scrub_text`), at most ``limit`` characters."""
    lines = str(text).strip().splitlines()
    line = scrub_text(lines[0] if lines else "")
    return line if len(line) <= limit else line[:limit - 3] + "..."
