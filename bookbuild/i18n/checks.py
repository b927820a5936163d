"""Checks of one translated paragraph against its English source (used by tests/build/test_translations.py).

A translation may reorder a sentence freely, but it must keep every cross-reference, computed
number, citation and formula of its source, and it must use the glossary's Chinese term wherever
the source uses an English glossary term:

    structure_problems(msgid, msgstr)           roles and inline math that differ
    glossary_problems(msgid, msgstr, terms)     glossary terms whose Chinese term is missing
"""
from __future__ import annotations

import re
from collections import Counter

ROLE = re.compile(r"\{(?P<role>[a-z]+(?::[a-z]+)?)\}`(?P<body>[^`]*)`")
TITLED = re.compile(r"^(?P<title>.*?)\s*<(?P<target>[^<>]+)>$", re.S)
INLINE_MATH = re.compile(r"(?<![\\$])\$(?!\$)(?P<tex>(?:[^$\\]|\\.)+?)\$")
CHECKED_ROLES = {"ref", "eq", "numref", "doc", "cite", "cite:p", "cite:t", "glue", "glue:text", "glue:md",
                 "glue:math", "download"}


def roles(text: str) -> Counter:
    """(role, target) of every checked role; a titled reference counts by its target only."""
    found = Counter()
    for m in ROLE.finditer(text):
        if m["role"] not in CHECKED_ROLES:
            continue
        titled = TITLED.match(m["body"])
        found[(m["role"], titled["target"] if titled else m["body"].strip())] += 1
    return found


def formulas(text: str) -> Counter:
    """Every inline formula $...$, with its spacing normalised."""
    text = ROLE.sub("", text)      # a role's body is not math, even if it holds a $
    return Counter(re.sub(r"\s+", " ", m["tex"]).strip() for m in INLINE_MATH.finditer(text))


def _difference(source: Counter, translation: Counter, what: str) -> list[str]:
    problems = []
    for item, n in (source - translation).items():
        problems.append(f"{what} {item!r} is missing from the translation" + (f" ({n} times)" if n > 1 else ""))
    for item in (translation - source):
        problems.append(f"{what} {item!r} is in the translation but not in the source")
    return problems


def structure_problems(msgid: str, msgstr: str) -> list[str]:
    """What a translation lost or added of its source's roles and inline formulas."""
    return _difference(roles(msgid), roles(msgstr), "role") + \
        _difference(formulas(msgid), formulas(msgstr), "formula")


def _prose(text: str) -> str:
    text = ROLE.sub(" ", text)
    text = INLINE_MATH.sub(" ", text)
    text = re.sub(r"`[^`]*`", " ", text)          # code is not prose
    # nor are operator names in display math (\operatorname{Attention}(Q, K, V) = ...)
    text = re.sub(r"\\(?:operatorname|mathrm|mathbf|mathit|mathsf|mathtt)\{[^{}]*\}", " ", text)
    return re.sub(r"\s+", " ", text).lower()


def glossary_problems(msgid: str, msgstr: str, terms: dict[str, str],
                      exceptions: frozenset[str] = frozenset(),
                      alternatives: dict[str, tuple[str, ...]] | None = None) -> list[str]:
    """Glossary terms of the source whose Chinese term the translation does not use.

    ``terms`` maps an English term (lower case) to its Chinese term; ``exceptions`` lists English
    terms that are too common as plain words to be checked (each with its reason, where defined);
    ``alternatives`` maps a term to the other forms Chinese texts write for it after its first use
    (``softmax`` for 归一化指数函数), which count as using the term.
    """
    prose = _prose(msgid)
    alternatives = alternatives or {}
    problems = []
    for english in sorted(terms, key=len, reverse=True):
        if english in exceptions:
            continue
        # a term inside an identifier (d_head, attention_mask) is code, not the term
        pattern = rf"(?<![a-z0-9_-]){re.escape(english)}(?:s|es)?(?![a-z0-9_-])"
        forms = (terms[english], *alternatives.get(english, ()))
        if re.search(pattern, prose):
            if not any(form.lower() in msgstr.lower() for form in forms):
                problems.append(f"the source says {english!r}; the translation lacks {terms[english]!r}")
            prose = re.sub(pattern, " ", prose)      # a longer term covers its parts, found or not
    return problems
