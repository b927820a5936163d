"""The catalogue of mistakes each checker can name, derived from the registry (never retyped).

``CATALOGUE`` maps each public checker name to the list of :class:`~.engine.Mistake` it can
report about its own task (from models or from properties). ``SHARED`` lists the failures every
checker reports besides (time limit, input changed in place, wrong type, dtype or shape).
"""
from __future__ import annotations

import re

from ..i18n import _, get_language
from . import topics  # noqa: F401  (importing the topics fills the registry)
from .engine import Mistake
from .registry import COMMON_MISTAKES, REGISTRY

CATALOGUE: dict[str, list[Mistake]] = {name: list(entry.mistakes) for name, entry in sorted(REGISTRY.items())}
SHARED: list[Mistake] = list(COMMON_MISTAKES)


def mistake_names(checker: str) -> list[str]:
    """The distinct mistake names a checker can report, in catalogue order."""
    seen = []
    for mistake in CATALOGUE[checker]:
        if mistake.name not in seen:
            seen.append(mistake.name)
    return seen


def summary(explanation: str) -> str:
    """The first sentence of an explanation (in the current language), for a short table entry."""
    text = _(explanation).strip()
    if "\u3002" in text:                  # a Chinese sentence ends with 。
        return text.split("\u3002")[0] + "\u3002"
    first = re.split(r"(?<=[A-Za-z0-9)\]`])(?<!e\.g)(?<!i\.e)\. (?=[A-Z`(])", text)[0]   # not after "e.g."
    return first.rstrip(".") + "."


def summaries_line(named: dict[str, str]) -> str:
    """``{mistake name: summary}`` as one table cell: "`a`: first; `b`: second." in English; in Chinese the
    sentences are joined with "；" and only the last keeps its "。" (never "。；")."""
    if get_language() != "zh_CN":             # "first; second.", never "first.; second."
        parts = [f"`{name}`: {text.rstrip('.')}" for name, text in named.items()]
        return "; ".join(parts) + ("." if parts else "")
    parts = [f"`{name}`：{text.rstrip(chr(0x3002) + '.')}" for name, text in named.items()]
    return "\uff1b".join(parts) + ("\u3002" if parts else "")
