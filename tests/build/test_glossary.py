"""Every Chinese gloss on every page is in the glossary, with one translation per English term.

The book introduces a term as "English term (中文)", e.g. "key (键)", or as "(English, 中文)"
inside the parenthesis. The glossary in notation.md lists each term once as a ``{glossary}``
entry "term (中文)"; an entry may carry several term lines for the forms the prose uses
("saturation", "saturated"), all with the same translation. This test reads every page's source,
finds every gloss, works out which glossary term it glosses (the English inside the parenthesis
if it is a glossary term, else the longest glossary term, or its plural, that the text before
the parenthesis ends with) and asserts that the page uses the glossary's translation. A gloss
whose English term is not in the glossary fails too.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted(
    [*ROOT.glob("chapters/*.md"), *ROOT.glob("exercises/*.md"), *ROOT.glob("solutions/*.md")]
    + [ROOT / name for name in ("notation.md", "intro.md", "checking.md", "instructors.md")]
)
CJK = "\u3400-\u9fff"
# "(中文)", "(ABBR, 中文)" or "(an English term, 中文)": the Chinese part starts with a CJK
# character and ends at the closing parenthesis or at a comma or semicolon
GLOSS = re.compile(rf"\((?:([A-Za-z][A-Za-z0-9/\- ]*), )?([{CJK}][^()\n,;]*)[^()\n]*\)")
TERM_LINE = re.compile(rf"^(\S[^()\n]*?) \(([{CJK}][^()\n]*)\)$")
# the glossary's own heading is not a gloss of a term
EXEMPT = {("## glossary", "术语表")}


def glossary_entries() -> list[list[tuple[str, str]]]:
    """The glossary block of notation.md: one list of (english, chinese) term lines per entry."""
    text = (ROOT / "notation.md").read_text(encoding="utf-8")
    block = text.split("```{glossary}", 1)[1].split("```", 1)[0]
    entries: list[list[tuple[str, str]]] = []
    previous_was_term = False
    for line in block.splitlines():
        m = TERM_LINE.match(line)
        if m:
            if not previous_was_term:
                entries.append([])
            entries[-1].append((m.group(1).lower(), m.group(2)))
        previous_was_term = bool(m)
    return entries


def glossary() -> dict[str, str]:
    """The glossary as {english term (lower case): chinese}."""
    terms: dict[str, str] = {}
    for entry in glossary_entries():
        for english, chinese in entry:
            assert english not in terms, f"glossary lists {english!r} twice"
            terms[english] = chinese
    return terms


def _plain(text: str) -> str:
    """Prose as one line, lower case, without markup that can sit between a term and its gloss."""
    text = re.sub(r"\{[a-z]+\}`([^`<]*)(?:<[^>]*>)?`", r"\1", text)   # {term}`x`, {ref}`x <y>`
    text = re.sub(r"[*_`]", "", text)
    return re.sub(r"\s+", " ", text).lower()


def glosses(path: Path):
    """(english inside the parenthesis or None, english context before it, chinese, line) per gloss."""
    text = path.read_text(encoding="utf-8")
    for m in GLOSS.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        before = _plain(text[max(0, m.start() - 200):m.start()]).rstrip()
        inside = m.group(1) and re.sub(r"^(a|an|the) ", "", m.group(1).lower())
        yield inside, before, m.group(2).strip(), line


def _term_for(before: str, terms: dict[str, str]) -> str | None:
    """The longest glossary term (or its plural) the text before a gloss ends with."""
    hits = [t for t in terms if any(
        before.endswith(form) and (len(before) == len(form) or not before[-len(form) - 1].isalnum())
        for form in (t, t + "s", t + "es", t[:-1] + "ies")
    )]
    return max(hits, key=len) if hits else None


def test_glossary_has_one_translation_per_term():
    entries = glossary_entries()
    terms = glossary()
    assert len(entries) > 50
    for entry in entries:
        assert len({chinese for _, chinese in entry}) == 1, f"an entry with two translations: {entry}"
    by_chinese: dict[str, list[str]] = {}
    for entry in entries:
        by_chinese.setdefault(entry[0][1], []).append(entry[0][0])
    shared = {c: e for c, e in by_chinese.items() if len(e) > 1}
    assert not shared, f"one Chinese term glosses several glossary entries: {shared}"
    assert len(terms) >= len(entries)


@pytest.mark.parametrize("path", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_gloss_is_in_the_glossary(path):
    terms = glossary()
    problems = []
    for inside, before, chinese, line in glosses(path):
        if any(before.endswith(e) and chinese == c for e, c in EXEMPT):
            continue
        term = inside if inside in terms else _term_for(before, terms)
        if term is None:
            problems.append(f"line {line}: '...{before[-40:]} ({chinese})' is not in the glossary")
        elif terms[term] != chinese:
            problems.append(
                f"line {line}: {term!r} is glossed ({chinese}) here but ({terms[term]}) in the glossary")
    assert not problems, f"{path.name}:\n" + "\n".join(problems)


def test_the_collector_finds_glosses():
    """The regular expressions themselves: plain, abbreviated and explained glosses, a line break."""
    sample = ("the **query** (查询) and a multilayer perceptron (MLP, 多层感知机), sequence\ntasks (序列任务),"
              " the row (a vector-Jacobian product, 向量-雅可比积), a KV cache (键值缓存, {ref}`ch-cost`)")
    found = [(m.group(1), m.group(2)) for m in GLOSS.finditer(sample)]
    assert found == [(None, "查询"), ("MLP", "多层感知机"), (None, "序列任务"),
                     ("a vector-Jacobian product", "向量-雅可比积"), (None, "键值缓存")]
    terms = {"query": "查询", "multilayer perceptron": "多层感知机", "sequence task": "序列任务"}
    assert _term_for(_plain("a multilayer perceptron"), terms) == "multilayer perceptron"
    assert _term_for(_plain("sequence\ntasks"), terms) == "sequence task"
    assert _term_for(_plain("the **query**"), terms) == "query"
    assert _term_for(_plain("a subquery"), terms) is None


# ------------------------------------------------- one Chinese word per concept (issue 29, review M8)

ZH_CATALOGS = sorted([*(ROOT / "locale" / "zh_CN" / "LC_MESSAGES").rglob("*.po"),
                      *(ROOT / "attnlab" / "locale" / "zh_CN" / "LC_MESSAGES").glob("*.po")])
# a variant the edition does not write -> the term it writes instead
DISALLOWED = {
    r"记忆(?!法)": "键值侧",        # memory side (the glossary's term); 形状记忆法, a mnemonic, is another word
    r"反向计算": "反向传播",
    r"前向计算": "前向传播",
    r"长方形": "矩形",
    r"批次?轴": "批量轴",           # the seeds' batch axis (批量轴 itself does not match)
    r"遮蔽|掩蔽": "屏蔽",           # the seeds' and 全屏蔽行's verb; 掩码 is the noun
    r"注意力汇聚(?!点)": "注意力",   # d2l-zh's attention pooling; 注意力汇聚点 is the attention sink
}
# the glossary's Chinese definitions name another book's or the seeds' word for its reader
# (「《动手学深度学习》译作“暂退法”。」, 「也称“排列等变性”。」); only there may a variant appear
ALIAS_NOTE = re.compile(r"[^。]*(?:《动手学深度学习》|也称)[^。]*。")
ALIASES = {"dropout": "暂退法", "mask": "掩蔽", "attention": "注意力汇聚", "attention sink": "注意力汇聚",
           "permutation equivariance": "排列等变性", "allowed set": "允许集合", "memory side": "记忆侧"}


def variants(text: str) -> list[str]:
    """'variant -> term' for each disallowed variant in a Chinese text."""
    return [f"{m.group()} -> {term}" for rule, term in DISALLOWED.items() for m in re.finditer(rule, text)]


def test_the_term_rules_catch_the_variants_and_spare_other_words():
    assert variants("有 $S$ 行的源记忆 $X_m$，批次轴，长方形用例，反向计算，遮蔽") == [
        "记忆 -> 键值侧", "反向计算 -> 反向传播", "长方形 -> 矩形", "批次轴 -> 批量轴", "遮蔽 -> 屏蔽"]
    assert variants("掩蔽分数，批轴，注意力汇聚") == ["批轴 -> 批量轴", "掩蔽 -> 屏蔽", "注意力汇聚 -> 注意力"]
    assert variants("形状记忆法；批量轴；注意力汇聚点；反向传播；矩形；全屏蔽行") == []
    assert ALIAS_NOTE.sub("", "在训练时把元素置零。《动手学深度学习》译作“暂退法”。") == "在训练时把元素置零。"


@pytest.mark.parametrize("path", ZH_CATALOGS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_chinese_catalog_uses_a_variant_term(path):
    polib = pytest.importorskip("polib")
    exempt = path.name == "notation.po"
    found = [f"{entry.msgid[:40]!r}: {v}" for entry in polib.pofile(str(path)) if not entry.obsolete
             for v in variants(ALIAS_NOTE.sub("", entry.msgstr) if exempt else entry.msgstr)]
    assert not found, "\n".join(found)


def test_no_chinese_gloss_in_the_sources_uses_a_variant_term():
    glossed = [(f"{path.name}:{line}", chinese) for path in PAGES for _, _, chinese, line in glosses(path)]
    glossed += [("glossary", chinese) for entry in glossary_entries() for _, chinese in entry]
    found = [f"{where}: {v}" for where, chinese in glossed for v in variants(chinese)]
    assert len(glossed) > 100 and not found, found


def test_the_chinese_glossary_names_other_books_terms_for_the_same_concept():
    """d2l-zh's 暂退法, 掩蔽, 注意力汇聚 and the seeds' 排列等变性, 允许集合, 记忆侧: a reader who knows those
    words finds this book's term by them."""
    polib = pytest.importorskip("polib")
    entries = list(polib.pofile(str(ROOT / "locale" / "zh_CN" / "LC_MESSAGES" / "notation.po")))
    terms = glossary()
    definitions = {entries[i].msgid: entries[i + 1].msgstr for i in range(len(entries) - 1)}
    missing = [f"{term}: “{alias}”" for term, alias in ALIASES.items()
               if f"“{alias}”" not in "".join(ALIAS_NOTE.findall(definitions[f"{term} ({terms[term]})"]))]
    assert not missing, missing
