"""The reading time of a page's core path: what the book shows under a chapter's title.

200 words a minute of prose plus a minute per 10 lines of visible code, leaving out "Going deeper"
sections (a heading whose label starts with ``deeper-``) and hidden cells, measured on the English
source so that both editions show the same figure. The book shows it through the role
``{reading-time}`core``` (_ext/core_path.py); the notebooks write it in the same words
(bookbuild.notebooks).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

WORDS_PER_MINUTE = 200
CODE_LINES_PER_MINUTE = 10
DEEPER = "deeper-"
HIDDEN_TAGS = ("remove-cell", "remove-input", "hide-input", "hide-cell")

_FENCE = re.compile(r"^(`{3,}|:{3,})\s*(\{[\w-]+\})?(.*)$")
_HEADING = re.compile(r"^(#{1,6})\s")
_LABEL = re.compile(r"^\(([\w-]+)\)=\s*$")
_MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.S)
_ROLE = re.compile(r"\{[\w:-]+\}`([^`]*)`")
_WORD = re.compile(r"[A-Za-z0-9][\w'’.-]*")


@dataclass(frozen=True)
class ReadingTime:
    words: int                 # prose words of the core path
    code_lines: int            # non-blank lines of visible code cells of the core path

    @property
    def minutes(self) -> int:
        return math.ceil(self.words / WORDS_PER_MINUTE + self.code_lines / CODE_LINES_PER_MINUTE)


def _front_matter_end(lines: list[str]) -> int:
    if lines and lines[0].strip() == "---":
        for i in range(1, len(lines)):
            if lines[i].strip() == "---":
                return i + 1
    return 0


def _count_words(line: str) -> int:
    """Words of a line of MyST prose: a formula counts as one word, a role as its text."""
    return len(_WORD.findall(_ROLE.sub(r"\1", _MATH.sub(" x ", line))))


def _code_cell_is_hidden(options: list[str]) -> bool:
    text = "\n".join(options)
    return any(tag in text for tag in HIDDEN_TAGS)


def reading_time(source: str) -> ReadingTime:
    """The reading time of a MyST page's core path (everything outside ``deeper-`` sections)."""
    lines = source.splitlines()
    i = _front_matter_end(lines)
    words = code = 0
    deeper_level = None              # heading level of the "Going deeper" section we are in
    pending_label = None
    while i < len(lines):
        line = lines[i]
        label, heading, fence = _LABEL.match(line), _HEADING.match(line), _FENCE.match(line)
        if label:
            pending_label = label[1]
        elif heading:
            level = len(heading[1])
            if deeper_level is not None and level <= deeper_level:
                deeper_level = None
            if deeper_level is None and (pending_label or "").startswith(DEEPER):
                deeper_level = level
            pending_label = None
        elif fence and (fence[2] or fence[1].startswith("`")):
            i, cell_words, cell_code = _read_block(lines, i, fence)
            if deeper_level is None:
                words, code = words + cell_words, code + cell_code
            pending_label = None
            continue
        elif line.strip():
            pending_label = None
        if deeper_level is None and not label:
            words += _count_words(line)
        i += 1
    return ReadingTime(words, code)


def _read_block(lines: list[str], start: int, fence: re.Match) -> tuple[int, int, int]:
    """Skip a fenced block; return (next line, prose words, visible code lines) it contributes."""
    marker, directive = fence[1], fence[2] or ""
    end = start + 1
    while end < len(lines) and not lines[end].startswith(marker[0] * len(marker)):
        end += 1
    body = lines[start + 1:end]
    if body[:1] == ["---"] and "---" in body[1:]:                 # options as a YAML block
        close = body.index("---", 1)
        options, content = body[1:close], body[close + 1:]
    else:
        options = [line for line in body if line.startswith(":")]
        content = [line for line in body if not line.startswith(":")]
    words = code = 0
    if directive == "{code-cell}":
        if not _code_cell_is_hidden(options):
            code = sum(1 for line in content if line.strip())
    elif directive in ("{math}", "{raw}") or not directive:
        pass                                     # formulas and literal blocks: read, not counted as prose
    else:                                        # admonitions, exercises, proofs: prose inside
        words = sum(_count_words(line) for line in content)
    return end + 1, words, code


MINUTES = {"en": ("about 1 minute", "about {n} minutes"), "zh_CN": ("约 1 分钟", "约 {n} 分钟")}


def reading_time_text(source: str, lang: str = "en") -> str:
    """"about 12 minutes" (or its translation) for a MyST page's source."""
    minutes = reading_time(source).minutes
    return MINUTES.get(lang, MINUTES["en"])[minutes != 1].format(n=minutes)
