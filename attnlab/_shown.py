"""Finding a text a page shows in the pages catalog, after its code has formatted it.

The catalog holds what the page's code says: a literal (``"its weights"``) or a template, the
text of an f-string or of a format string with its fields (``"worst error {err:.1e}"``). What
reaches the output is the formatted text (``"worst error 3.1e-16"``). :class:`Index` maps one
to the other, in this order:

1. the text is a message itself;
2. it is a message padded with spaces (``f"{'mean s^2':>9}"``): translated, padded to the same
   width, counting a wide (CJK) character as two columns;
3. it matches a template: each literal part of the template must be there (in a sentence, a run of
   spaces may be any run of white space, so that ``textwrap.fill`` may have broken it), each field
   captures what stands in its place (exactly its width, if it has one: a label padded to it, or a
   number formatted to it; a longer value is not found). The translation's fields get the same
   captures; a capture that is itself a message (a label a loop put into the f-string) is
   translated too and padded to its field's width. The most specific template wins: the one with
   the most literal text, then the most widths;
4. a row of a Markdown table (``| a | b |``): each cell on its own, as a message;
5. several lines: each line on its own.

Anything else is returned as it is: numbers, arrays, code, text no page wrote.
"""
from __future__ import annotations

import re
import string
import unicodedata
from dataclasses import dataclass

_FORMATTER = string.Formatter()
_WIDTH = re.compile(r"^(?:.?[<>=^])?[-+ ]?z?#?0?(\d+)")
_ALIGN = re.compile(r"^.?([<>=^])")
_SPEC = re.compile(r"(?:.?[<>=^])?[-+ ]?z?#?0?\d*[_,]?(?:\.\d+)?[bcdeEfFgGnosxX%]?|.*\{.*\}.*")


def display_width(text: str) -> int:
    """Columns ``text`` takes in a monospaced font: a wide (CJK) character counts two."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def pad(text: str, width: int, align: str) -> str:
    """``text`` padded with spaces to ``width`` display columns: ``"<"`` left, ``">"`` right, ``"^"`` centred."""
    room = max(0, width - display_width(text))
    if align == ">":
        return " " * room + text
    if align == "^":
        return " " * (room // 2) + text + " " * (room - room // 2)
    return text + " " * room


def _parse(text: str):
    """(literal, field key, spec) triples of a format string; None if it is not one."""
    try:
        parsed = list(_FORMATTER.parse(text))
    except ValueError:
        return None
    return [(literal, None if name is None else (name, conversion), spec or "")
            for literal, name, spec, conversion in parsed]


def _literal_pattern(literal: str) -> str:
    return r"\s+".join(re.escape(piece) for piece in re.split(r"\s+", literal))


@dataclass(frozen=True)
class Template:
    """A message with fields, its translation, and the pattern its formatted text matches."""
    pattern: re.Pattern
    keys: tuple            # the field key of each group of ``pattern``
    translation: tuple     # the translation's (literal, key, spec) triples
    literal_chars: int
    widths: int
    anchors: tuple         # words that any text it matches contains
    same: bool             # the translation is the message (a table row's layout)

    @classmethod
    def of(cls, message: str, translation: str) -> Template | None:
        parsed, target = _parse(message), _parse(translation)
        if not parsed or not target or all(key is None for _, key, _ in parsed):
            return None
        literals = "".join(literal for literal, _, _ in parsed)
        anchors = tuple(literals.split())
        pattern, keys, widths = [], [], 0
        for literal, key, spec in parsed:
            # a run of spaces in a sentence may have been wrapped (textwrap); a table's layout is exact
            pattern.append(_literal_pattern(literal) if anchors else re.escape(literal))
            if key is not None:
                width = _WIDTH.match(spec)
                widths += width is not None
                pattern.append(f"(.{{{width.group(1)}}})" if width else "(.*?)")   # padded to exactly its width
                keys.append(key)
        specs = [spec for _, key, spec in parsed if key is not None]
        if not all(_SPEC.fullmatch(spec) for spec in specs):    # not a format string after all ("{x[':']}")
            return None
        placed = all(_WIDTH.match(spec) for spec in specs[:-1])    # a layout: every field but the last has a width
        if not anchors and not (widths and placed):                 # else it would match anything
            return None
        return cls(re.compile("".join(pattern), re.S), tuple(keys), tuple(target),
                   len("".join(anchors)), widths, anchors, message == translation)

    def fill(self, text: str, lookup) -> str | None:
        """``text`` in the translation's words, or None if it does not match or nothing changes."""
        if not all(anchor in text for anchor in self.anchors):
            return None
        match = self.pattern.fullmatch(text)
        if match is None:
            return None
        captured = dict(zip(self.keys, match.groups()))
        out, changed = [], not self.same
        for literal, key, spec in self.translation:
            out.append(literal)
            if key is None:
                continue
            value = captured.get(key, "")
            core = value.strip()
            translated = lookup(core) if core else None
            if translated is not None:
                width = _WIDTH.match(spec)
                align = _ALIGN.match(spec)
                value = pad(translated, int(width.group(1)) if width else 0, align.group(1) if align else "<")
                changed = True
            out.append(value)
        return "".join(out) if changed else None


class Index:
    """The pages catalog, ready to translate what a page shows (see the module's docstring)."""

    def __init__(self, catalog: dict[str, str]):
        self.messages = {k: v for k, v in catalog.items() if isinstance(k, str) and k and v}
        templates = (Template.of(k, v) for k, v in self.messages.items() if "{" in k)
        self.templates = sorted((t for t in templates if t is not None),
                                key=lambda t: (-t.literal_chars, -t.widths))

    def message(self, text: str) -> str | None:
        """The translation of ``text`` as a whole message, possibly padded with spaces."""
        hit = self.messages.get(text)
        if hit is not None:
            return hit
        core = text.strip(" ")
        if core == text or core not in self.messages:
            return None
        lead, trail = text[: len(text) - len(text.lstrip(" "))], text[len(core) + len(text) - len(text.lstrip(" ")):]
        translated = self.messages[core]
        width = display_width(text)
        if lead and not trail:
            return pad(translated, width, ">")
        return pad(lead + translated, width, "<")

    def _cell(self, cell: str) -> str:
        core = cell.strip()
        hit = self.messages.get(core) if core else None
        return cell if hit is None else cell.replace(core, hit, 1)

    def translate(self, text: str) -> str:
        """``text`` in the catalog's language, or ``text`` itself (see the module's docstring)."""
        hit = self.message(text)
        if hit is not None:
            return hit
        for template in self.templates:
            filled = template.fill(text, self.message)
            if filled is not None:
                return filled
        if "\n" in text:
            return "\n".join(self.translate(line) if line.strip() else line for line in text.split("\n"))
        if text.startswith("|") and text.endswith("|") and text.count("|") > 2:
            cells = text[1:-1].split("|")
            return "|" + "|".join(self._cell(c) for c in cells) + "|"
        return text
