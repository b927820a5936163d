"""Bespoke: in the Chinese edition, no space after a run-in head ending in 。：， nor around Chinese link text.

English run-in heads (``**Variable length.** A sentence…``) carry a space after the bold text; the
Chinese catalog cannot drop it, because CommonMark closes ``**`` after punctuation only before a
space or punctuation (``**长度可变。**一个`` stays unbolded). So the catalog keeps
``**长度可变。** 一个`` and this transform removes the space in the doctree: after a ``strong`` or
``emphasis`` whose text ends in full-width punctuation, the next text loses its leading spaces.
The same for links: the catalog writes ``在 {ref}`ex-masks` 中`` because the link text is only
known once references resolve (``练习 3.2``, a Chinese section title, or ``MiniLM …``); here the
space between a Chinese character and a link whose text starts (ends) with one goes.
A link whose text is a page's title, cited in a Chinese sentence, names that page as a work and
gets 《》 (「见《记号与约定》」, 「《第 3 章习题：掩码》的详细解答」); a link with its own text
(「第 3 章」) or one that heads a line (「查询、键和值：……」, a list of chapters) does not.
Numbered titles: Sphinx writes ``<span class="caption-number">练习 3.1 </span>`` with a trailing
space, so 「练习 3.1 （带偏移的因果掩码）」; in the written pages the space before a 「（」 goes.
Only where ``language`` is Chinese; the rule is tested in tests/build/test_zh_spacing.py.
"""
from __future__ import annotations

import re
from pathlib import Path

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform

FULL_WIDTH_PUNCTUATION = "，。：；！？、）」』》】"
CJK = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]")


def ends_in_full_width_punctuation(node: nodes.Node) -> bool:
    return node.astext().endswith(tuple(FULL_WIDTH_PUNCTUATION))


def drop_spaces_after_run_in_heads(tree: nodes.Node) -> int:
    """Strip the leading spaces of the text after each bold/italic run ending in 。：，… ; return how many."""
    dropped = 0
    for head in list(tree.findall(lambda n: isinstance(n, (nodes.strong, nodes.emphasis)))):
        after = head.next_node(descend=False, siblings=True)
        if isinstance(after, nodes.Text) and after.startswith(" ") and ends_in_full_width_punctuation(head):
            after.parent.replace(after, nodes.Text(after.lstrip(" ")))
            dropped += 1
    return dropped


def is_cjk(char: str) -> bool:
    return bool(char) and CJK.fullmatch(char) is not None


def drop_spaces_around_chinese_links(tree: nodes.Node) -> int:
    """Between a Chinese character and a link whose text begins/ends in one, drop the space; return how many."""
    dropped = 0
    for link in list(tree.findall(nodes.reference)):
        text = link.astext()
        if not text:
            continue
        index = link.parent.index(link)
        before = link.parent[index - 1] if index > 0 else None
        if (isinstance(before, nodes.Text) and before.endswith(" ") and is_cjk(before.rstrip(" ")[-1:])
                and is_cjk(text[0])):
            before.parent.replace(before, nodes.Text(before.rstrip(" ")))
            dropped += 1
        after = link.next_node(descend=False, siblings=True)
        if (isinstance(after, nodes.Text) and after.startswith(" ") and is_cjk(after.lstrip(" ")[:1])
                and is_cjk(text[-1])):
            after.parent.replace(after, nodes.Text(after.lstrip(" ")))
            dropped += 1
    return dropped


def quote_cited_titles(tree: nodes.Node, titles: set[str]) -> int:
    """Put 《》 around each link whose text is one of ``titles`` and that stands in a Chinese sentence
    (after Chinese text, or opening the paragraph before Chinese words), dropping the spaces beside it;
    return how many."""
    quoted = 0
    for link in list(tree.findall(nodes.reference)):
        parent = link.parent
        if link.astext() not in titles or not isinstance(parent, nodes.paragraph):
            continue
        index = parent.index(link)
        before = parent[index - 1] if index > 0 else None
        after = link.next_node(descend=False, siblings=True)
        last = before.rstrip(" ")[-1:] if isinstance(before, nodes.Text) else ""
        first = after.lstrip(" ")[:1] if isinstance(after, nodes.Text) else ""
        in_sentence = is_cjk(last) and last != "《"
        opens_sentence = before is None and is_cjk(first) and first not in FULL_WIDTH_PUNCTUATION + "》"
        if not (in_sentence or opens_sentence):
            continue
        if isinstance(before, nodes.Text):
            parent.replace(before, nodes.Text(before.rstrip(" ") + "《"))
        else:
            parent.insert(index, nodes.Text("《"))
        if isinstance(after, nodes.Text):
            parent.replace(after, nodes.Text("》" + after.lstrip(" ")))
        else:
            parent.insert(parent.index(link) + 1, nodes.Text("》"))
        quoted += 1
    return quoted


class ZhRunInHeads(SphinxPostTransform):
    default_priority = 50

    def run(self, **kwargs) -> None:
        if (self.config.language or "").startswith("zh"):
            quote_cited_titles(self.document, {title.astext() for title in self.env.titles.values()})
            drop_spaces_after_run_in_heads(self.document)
            drop_spaces_around_chinese_links(self.document)


CAPTION_BEFORE_PAREN = re.compile(r'(<span class="caption-number">[^<]*?)\s+</span>\s*(?=（)')


def close_numbered_titles(html: str) -> str:
    """「练习 3.1（…）」: no space between a caption number and the full-width parenthesis after it."""
    return CAPTION_BEFORE_PAREN.sub(r"\1</span>", html)


def close_numbered_titles_in_pages(app, exception) -> None:
    if exception is not None or not (app.config.language or "").startswith("zh") or app.builder.format != "html":
        return
    for page in Path(app.outdir).rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        if (fixed := close_numbered_titles(html)) != html:
            page.write_text(fixed, encoding="utf-8")


def setup(app):
    app.add_post_transform(ZhRunInHeads)
    app.connect("build-finished", close_numbered_titles_in_pages)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
