"""Bespoke: a glossary term and its word forms on one line.

A glossary entry that lists word forms of one term shows them on one line.

The glossary in notation.md lists a term together with its word forms, each with the one Chinese
term they share, so that a ``{term}`` role and the gloss test find every form::

    saturation (饱和)
    saturated (饱和)
    saturates (饱和)
      Softmax weights pinned near 0 and 1, ...

Rendered as written, the entry repeats the Chinese term on three lines, and in the Chinese edition
(饱和（saturation）, 饱和（saturated）, 饱和（saturates）) reads as three entries. This post-transform
writes such an entry as one term line, "saturation, saturated, saturates (饱和)" or
"饱和（saturation、saturated、saturates）", and keeps every form's anchor on that line, so that a
link to any form still lands on it. Entries whose terms do not share their gloss stay as they are.
"""
from __future__ import annotations

import re

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform

ENGLISH_FIRST = re.compile(r"^(?P<word>[^()（）]+?) \((?P<gloss>[^()]+)\)$")       # saturation (饱和)
CHINESE_FIRST = re.compile(r"^(?P<gloss>[^()（）]+)（(?P<word>[^（）]+)）$")         # 饱和（saturation）


def split_term(text: str) -> tuple[str, str, bool] | None:
    """(word, gloss, whether the gloss comes first) of a glossary term, or None."""
    text = text.strip()
    for pattern, gloss_first in ((CHINESE_FIRST, True), (ENGLISH_FIRST, False)):
        found = pattern.match(text)
        if found:
            return found["word"].strip(), found["gloss"].strip(), gloss_first
    return None


def one_line(words: list[str], gloss: str, gloss_first: bool) -> str:
    return f"{gloss}（{'、'.join(words)}）" if gloss_first else f"{', '.join(words)} ({gloss})"


class MergeWordForms(SphinxPostTransform):
    default_priority = 100          # before the Chinese runs are marked (cjk_glosses, 900)

    def run(self, **kwargs) -> None:
        if self.app.builder.name == "gettext":     # the catalogs keep one entry per word form
            return
        for glossary in self.document.findall(addnodes.glossary):
            for item in list(glossary.findall(nodes.definition_list_item)):
                merge_item(item)


def merge_item(item: nodes.definition_list_item) -> bool:
    """Merge the terms of one entry into its first term if they share their gloss; whether it did."""
    terms = [child for child in item.children if isinstance(child, nodes.term)]
    if len(terms) < 2:
        return False
    parts = [split_term(term.astext()) for term in terms]
    if None in parts or len({(gloss, first) for _, gloss, first in parts}) != 1:
        return False
    _, gloss, gloss_first = parts[0]
    first = terms[0]
    index_entries = [node for term in terms for node in term.children if isinstance(node, addnodes.index)]
    del first[:]
    first += nodes.Text(one_line([word for word, _, _ in parts], gloss, gloss_first))
    for entry in index_entries:
        first += entry
    for term in terms[1:]:
        first["ids"].extend(term["ids"])
        item.remove(term)
    return True


def setup(app):
    app.add_post_transform(MergeWordForms)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
