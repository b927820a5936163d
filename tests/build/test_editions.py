"""The configs of the other builds, generated from _config.yml by bookbuild.editions, and the
language switch between the editions (_ext/edition_switch.py)."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import yaml

ROOT = Path(__file__).resolve().parents[2]
import edition_switch  # noqa: E402  (the Sphinx extensions are on pytest's pythonpath)

from bookbuild import editions as edition_config  # noqa: E402

BASE = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))


def test_the_chinese_edition_is_chinese_executes_in_its_own_cache_and_has_its_own_pdf():
    zh = edition_config.zh_config(BASE)
    sphinx = zh["sphinx"]["config"]
    assert sphinx["language"] == "zh_CN" and sphinx["locale_dirs"] == ["locale/"]
    assert zh["execute"]["execute_notebooks"] == BASE["execute"]["execute_notebooks"] != "off"
    assert zh["execute"]["cache"] != BASE["execute"]["cache"]
    assert "cjk_glosses" not in zh["sphinx"]["local_extensions"]
    assert zh["latex"]["latex_documents"]["targetname"] == "attention-computed-zh.tex"
    assert sphinx["pdf_download_file"].endswith("attention-computed-zh.pdf")
    preamble = sphinx["latex_elements"]["preamble"]
    assert "\\contentsname}{目录}" in preamble and "章节" in preamble and "第" in preamble
    assert "xeCJKDeclareCharClass" not in sphinx["latex_elements"]["fontpkg"]   # Chinese quotes stay full-width
    assert BASE["sphinx"]["config"].get("language") in (None, "en")            # the English config is untouched
    assert zh["title"] == "注意力，算出来" and "编写组" in zh["author"]          # the footer and the PDF's title page


def test_the_chinese_bibliography_describes_the_source_texts_in_chinese_and_keeps_every_entry():
    from pybtex.database import parse_string

    english = parse_string((ROOT / "references.bib").read_text(encoding="utf-8"), "bibtex")
    fields = yaml.safe_load((ROOT / edition_config.ZH_BIB_FIELDS).read_text(encoding="utf-8"))
    chinese = parse_string(edition_config.translated_bib(
        (ROOT / "references.bib").read_text(encoding="utf-8"), fields), "bibtex")
    assert list(chinese.entries) == list(english.entries)          # same keys, same order
    sources = [key for key in english.entries if key.startswith("src-")]
    assert sorted(fields) == sorted(sources)                       # every source text, nothing else
    for key in sources:
        entry = chinese.entries[key]
        assert str(entry.persons["author"][0]).startswith("{源文本")
        assert all("\u4e00" <= c <= "\u9fff" for c in entry.fields["note"][:3])
        assert entry.fields["year"] == english.entries[key].fields["year"]
    paper = next(key for key in english.entries if not key.startswith("src-"))
    assert chinese.entries[paper].fields["title"] == english.entries[paper].fields["title"]
    assert edition_config.zh_config(BASE)["bibtex_bibfiles"] == [edition_config.ZH_BIB]


def test_a_translated_field_that_matches_no_entry_is_an_error():
    import pytest

    with pytest.raises(SystemExit, match="src-nothing.title"):
        edition_config.translated_bib("@misc{src-a,\n  title = {A},\n}\n", {"src-nothing": {"title": "无"}})


def test_extraction_executes_from_the_english_cache_and_keeps_line_numbers_out():
    pot = edition_config.pot_config(BASE)
    assert pot["execute"] == BASE["execute"]             # figure captions exist only with outputs
    assert pot["sphinx"]["config"]["gettext_compact"] is False
    assert pot["sphinx"]["config"]["gettext_location"] is False


def test_the_chinese_table_of_contents_translates_its_captions(tmp_path):
    import polib

    catalog = polib.POFile()
    catalog.append(polib.POEntry(msgid="Chapters", msgstr="章节"))
    catalog.append(polib.POEntry(msgid="Exercises", msgstr="练习", flags=["fuzzy"]))
    catalog.save(str(tmp_path / "intro.po"))
    toc = {"root": "intro", "parts": [{"caption": "Chapters", "chapters": []},
                                      {"caption": "Exercises", "chapters": []}]}
    translated = edition_config.translated_toc(toc, tmp_path / "intro.po")
    assert [p["caption"] for p in translated["parts"]] == ["章节", "Exercises"]   # a fuzzy one is not used
    assert toc["parts"][0]["caption"] == "Chapters"                              # the English toc is a copy


def _switch(tmp_path, edition, toc, zh_built):
    if zh_built:
        (tmp_path / "_build" / "zh" / "html").mkdir(parents=True)
        (tmp_path / "_build" / "zh" / "html" / "index.html").write_text("")
    app = SimpleNamespace(confdir=str(tmp_path), builder=SimpleNamespace(format="html"),
                          config=SimpleNamespace(html_context={"edition": edition}, external_toc_path=toc))
    edition_switch._decide(app)
    context = {}
    edition_switch._add_switch(app, "chapters/03_masks", "page.html", context, None)
    return context.get("metatags", "")


def test_the_switch_links_the_twin_page_only_where_it_exists(tmp_path):
    assert _switch(tmp_path / "a", "en", "_toc.yml", zh_built=False) == ""
    english = _switch(tmp_path / "b", "en", "_toc.yml", zh_built=True)
    assert 'content="../../zh/html/chapters/03_masks.html"' in english and 'data-label="中文"' in english
    chinese = _switch(tmp_path / "c", "zh", "_toc_zh.yml", zh_built=False)
    assert 'content="../../../html/chapters/03_masks.html"' in chinese and 'data-label="English"' in chinese
    assert _switch(tmp_path / "d", "en", "_toc_student.yml", zh_built=True) == ""   # no solutions behind it


# --- the editions as data (bookbuild.editions.Edition) -----------------------------------------------

def test_every_edition_derives_its_own_config_toc_cache_and_output():
    from bookbuild.editions import EDITIONS, Edition, edition_config, full_toc, student_toc

    editions = [*EDITIONS.values(), Edition("zh_CN", "student", "pdf")]       # a new edition: one value
    assert len({e.output for e in editions}) == len(editions)
    assert len({(e.config_file, e.toc_file) for e in editions}) >= len(editions) - 2   # html and pdf share
    assert {e.cache for e in editions} == {Edition().cache, Edition("zh_CN").cache}    # one cache per language
    pdfs = [edition_config(e)["latex"]["latex_documents"]["targetname"] for e in editions if e.fmt == "pdf"]
    assert len(set(pdfs)) == len(pdfs) and all(e.output.suffix == ".pdf" for e in editions if e.fmt == "pdf")
    student = [c["file"] for part in student_toc(full_toc())["parts"] for c in part["chapters"]]
    assert "solutions_withheld" in student and not [f for f in student if f.startswith("solutions/")]


def test_an_edition_refuses_what_it_does_not_know_by_name():
    import pytest

    from bookbuild.editions import Edition

    with pytest.raises(ValueError, match="lang is one of en, zh_CN; got 'fr'"):
        Edition("fr")
    with pytest.raises(ValueError, match="audience is one of full, student"):
        Edition(audience="teacher")
