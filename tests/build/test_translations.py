"""The Chinese edition's catalogs: each translation keeps its source's references, numbers, citations
and formulas, and uses the glossary's terms (bookbuild.i18n.checks).

The checks are tested on made-up pairs first, so that they are known to catch what they are for,
then applied to every translated entry of every catalog in locale/zh_CN.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
from bookbuild.i18n.checks import formulas, glossary_problems, roles, structure_problems  # noqa: E402

CATALOGS = sorted((ROOT / "locale" / "zh_CN" / "LC_MESSAGES").rglob("*.po"))
TERMS = {"key": "键", "query": "查询", "causal mask": "因果掩码", "mask": "掩码"}
SOURCE = ("The query reads each key through the causal mask of {ref}`ch-masks`; "
          "{glue:text}`n_keys` keys, $T \\times S$ scores, see {eq}`eq-softmax` and {cite}`vaswani2017`.")
GOOD = ("查询通过 {ref}`第 3 章 <ch-masks>` 的因果掩码读取每个键；{cite}`vaswani2017` 中共有 "
        "{glue:text}`n_keys` 个键、$T   \\times S$ 个分数，见 {eq}`eq-softmax`。")


def test_a_faithful_translation_passes_in_any_order():
    assert structure_problems(SOURCE, GOOD) == []
    assert glossary_problems(SOURCE, GOOD, TERMS) == []


def test_a_lost_reference_glue_or_citation_is_named():
    for lost in ("{ref}`第 3 章 <ch-masks>`", "{glue:text}`n_keys`", "{cite}`vaswani2017`", "{eq}`eq-softmax`"):
        problems = structure_problems(SOURCE, GOOD.replace(lost, "这里"))
        assert len(problems) == 1 and "is missing from the translation" in problems[0], lost


def test_a_changed_or_added_formula_is_named():
    assert structure_problems(SOURCE, GOOD.replace("$T   \\times S$", "$T S$")) == [
        "formula 'T \\\\times S' is missing from the translation",
        "formula 'T S' is in the translation but not in the source"]


def test_a_retargeted_reference_is_named():
    problems = structure_problems(SOURCE, GOOD.replace("<ch-masks>", "<ch-qkv>"))
    assert "role ('ref', 'ch-masks') is missing from the translation" in problems
    assert "role ('ref', 'ch-qkv') is in the translation but not in the source" in problems


def test_a_missing_glossary_term_is_named_and_longer_terms_cover_their_parts():
    assert glossary_problems(SOURCE, GOOD.replace("因果掩码", "遮挡"), TERMS) == [
        "the source says 'causal mask'; the translation lacks '因果掩码'"]
    assert glossary_problems("masks and keys", "掩码与键", TERMS) == []       # plurals count
    assert glossary_problems("the `key` argument", "参数 `key`", TERMS) == []  # code is not prose
    formula = "\\operatorname{Mask}(Q, K) = Q K^\\top"                         # nor an operator name
    assert glossary_problems(formula, formula, TERMS) == []


def test_a_longer_term_that_is_translated_covers_its_parts():
    # "rotary position embedding" is 旋转位置编码, although "position embedding" alone is 位置嵌入
    terms = {"rotary position embedding": "旋转位置编码", "position embedding": "位置嵌入"}
    assert glossary_problems("a rotary position embedding", "旋转位置编码", terms) == []
    assert glossary_problems("a rotary position embedding", "旋转位置嵌入", terms) == [
        "the source says 'rotary position embedding'; the translation lacks '旋转位置编码'"]
    assert glossary_problems("a learned position embedding", "学习的位置编码", terms) == [
        "the source says 'position embedding'; the translation lacks '位置嵌入'"]


def test_an_alternative_form_counts_as_the_term_and_only_for_its_term():
    terms = {"softmax": "归一化指数函数", "key": "键"}
    also = {"softmax": ("softmax",)}
    assert glossary_problems("a softmax of the key scores", "对键的分数取 Softmax", terms, alternatives=also) == []
    assert glossary_problems("a softmax of the key scores", "对 key 的分数取 softmax", terms, alternatives=also) == [
        "the source says 'key'; the translation lacks '键'"]


def test_roles_and_formulas_are_read_as_written():
    assert roles(SOURCE)[("ref", "ch-masks")] == 1
    assert formulas("cost $O(T^2)$ and $$x$$ display") == {"O(T^2)": 1}


@pytest.mark.parametrize("catalog", CATALOGS, ids=lambda p: str(p.relative_to(ROOT / "locale")))
def test_every_translation_keeps_its_roles_and_formulas(catalog):
    polib = pytest.importorskip("polib")
    problems = [f"{entry.msgid[:60]!r}: {p}"
                for entry in polib.pofile(str(catalog)) if entry.translated() and not entry.fuzzy
                for p in structure_problems(entry.msgid, entry.msgstr)]
    assert not problems, "\n".join(problems)


# English glossary terms that are also everyday words in the prose; each is checked where the
# glossary defines it, not in every sentence that happens to use the word
PLAIN_WORDS = frozenset({"block", "cache", "caches", "decoding", "backend", "intervene", "intervention"})
# the forms Chinese texts (the seeds included) write after a term's first use
# (键值缓存 and 随机失活 have no alternative: the edition writes them one way, not also "KV 缓存" or "dropout")
ALTERNATIVES = {"softmax": ("softmax",), "token": ("token",)}


@pytest.mark.parametrize("catalog", CATALOGS, ids=lambda p: str(p.relative_to(ROOT / "locale")))
def test_every_translation_uses_the_glossary_terms(catalog):
    polib = pytest.importorskip("polib")
    from tests.build.test_glossary import glossary

    terms = glossary()
    problems = [f"{entry.msgid[:60]!r}: {p}"
                for entry in polib.pofile(str(catalog))
                if entry.translated() and not entry.fuzzy and entry.msgstr != entry.msgid   # kept as written
                for p in glossary_problems(entry.msgid, entry.msgstr, terms, PLAIN_WORDS, ALTERNATIVES)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("catalog", CATALOGS, ids=lambda p: str(p.relative_to(ROOT / "locale")))
def test_an_entry_kept_as_written_is_a_formula_or_a_name_not_english_prose(catalog):
    """Display formulas must stay as written (Sphinx re-parses a translated math block as a literal
    block, which MyST shows as "::"), and so may code names; English prose may not hide among them."""
    polib = pytest.importorskip("polib")
    kept = [e.msgid for e in polib.pofile(str(catalog)) if e.msgstr == e.msgid]
    prose = [m for m in kept if re.search(r"[A-Za-z]{3,}(?:\s+[A-Za-z]{3,})+", re.sub(r"\\[A-Za-z]+", " ", m))]
    assert not prose, f"English prose kept untranslated: {prose[:3]}"


# ------------------------------------------------------------------ coverage: the gate of the zh edition

def test_every_catalog_translates_all_of_its_page_with_no_fuzzy_entry():
    """A changed English paragraph leaves its old translation fuzzy (never shown): translate it."""
    from bookbuild.i18n.prose import coverage, table

    rows = coverage()
    assert rows, "no catalogs in locale/zh_CN: run `make translations`"
    incomplete = [r for r in rows if not r.complete]
    assert not incomplete, "pages of the Chinese edition not fully translated:\n" + table(incomplete)


@pytest.mark.slow
def test_the_catalogs_hold_exactly_the_current_english_text():
    """Extracted afresh from the sources: every page has its catalog and no text is missing or stale."""
    from bookbuild.i18n.prose import stale

    problems = stale()
    assert problems == [], "run `make translations` and translate what it reports:\n" + "\n".join(problems)


def test_display_maths_is_translated_as_itself():
    """A display formula's entry keeps its msgstr equal to its msgid: Sphinx renders a changed math
    block as an empty formula ("::"), which test_browser_zh only finds after a build."""
    import polib

    changed = [(po.relative_to(ROOT).as_posix(), e.msgid[:50]) for po in CATALOGS for e in polib.pofile(po)
               if "$" not in e.msgid and re.search(r"\\(frac|begin\{|qquad|sum)", e.msgid)
               and e.msgstr != e.msgid]
    assert changed == [], f"display maths translated (write its words in the prose around it): {changed}"


# ------------------------------------------------------------------ cited works (issue 29, review M10)

def work_titles() -> list[str]:
    """The titles of references.bib's works that prose could name: several words (not a model's name
    such as "Mistral 7B"); of a bilingual title, its Chinese part unless it is a glossary term
    (注意力机制, the textbook's title, is also the term "attention mechanism")."""
    from tests.build.test_glossary import glossary

    terms = set(glossary().values())
    bib = (ROOT / "references.bib").read_text(encoding="utf-8")
    titles = []
    for title in re.findall(r"^\s*title\s*=\s*\{(.+)\},?\s*$", bib, re.M):
        title = re.sub(r"[{}]", "", title)
        chinese = re.match(r"([^()]*[\u4e00-\u9fff][^()]*?) \(", title)
        title = chinese.group(1) if chinese else title.split(":")[0] if len(title.split(":")[0].split()) > 2 else title
        if (len(title.split()) > 2 or chinese) and title not in terms:
            titles.append(title)
    return titles


def unmarked_titles(text: str, titles) -> list[str]:
    """Each title named in ``text`` outside 《》."""
    return [t for t in titles for m in re.finditer(re.escape(t), text, re.I)
            if not (text[:m.start()].endswith("《") and text[m.end():].startswith("》"))]


def test_a_work_named_in_chinese_prose_is_in_book_title_marks():
    titles = work_titles()
    assert "Attention Is All You Need" in titles and "把注意力逐项算清楚" in titles and "Mistral 7B" not in titles
    assert "注意力机制" not in titles
    assert unmarked_titles("正如 Attention Is All You Need 所述", titles) == ["Attention Is All You Need"]
    assert unmarked_titles("正如《Attention Is All You Need》所述", titles) == []
    polib = pytest.importorskip("polib")
    catalogs = [*CATALOGS, *(ROOT / "attnlab" / "locale" / "zh_CN" / "LC_MESSAGES").glob("*.po")]
    found = [f"{po.name}: {t}" for po in catalogs for e in polib.pofile(str(po)) if not e.obsolete
             for t in unmarked_titles(e.msgstr, titles)]
    assert not found, found
