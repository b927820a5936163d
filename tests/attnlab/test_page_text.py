"""attnlab.page_text (al.tr): a page's text in the current language from the pages catalog, English by default."""
import string

import polib
import pytest

import attnlab as al
from attnlab import i18n

PAGES_PO = i18n.LOCALE_DIR / "zh_CN" / "LC_MESSAGES" / "pages.po"


@pytest.fixture(autouse=True)
def english_afterwards():
    yield
    i18n.set_language("en")


def entries():
    return [e for e in polib.pofile(str(PAGES_PO)) if e.msgid and e.msgstr and not e.obsolete and not e.fuzzy]


def test_tr_gives_the_chinese_under_zh_cn_and_the_english_under_en():
    m = next(m for m in entries() if m.msgstr != m.msgid)
    assert al.tr is al.page_text is i18n.page_text
    assert al.tr(m.msgid) == m.msgid                          # English by default
    al.set_language("zh_CN")
    assert al.tr(m.msgid) == m.msgstr
    al.set_language("en")
    assert al.tr(m.msgid) == m.msgid


def test_tr_leaves_an_unknown_string_as_it_is_in_both_languages():
    al.set_language("zh_CN")
    assert al.tr("no page writes this {x}").format(x=1) == "no page writes this {x}".format(x=1)


def test_a_template_formats_after_translating_as_before():
    m = next(m for m in entries() if "{" in m.msgid and all(
        name and name.isidentifier() for _, name, _, _ in string.Formatter().parse(m.msgid) if name is not None))
    fields = {name: 7 for _, name, _, _ in string.Formatter().parse(m.msgid) if name}
    al.set_language("zh_CN")
    assert al.tr(m.msgid).format(**fields) == m.msgstr.format(**fields)


def test_a_formatted_text_is_translated_by_its_template():
    m = next(m for m in entries() if "{" in m.msgid and m.msgid.count("{") == 1 and m.msgid.endswith(":.1e}"))
    field = m.msgid[m.msgid.index("{"):]
    al.set_language("zh_CN")
    assert al.tr(m.msgid.replace(field, "1.5e-07")) == m.msgstr.replace(field, "1.5e-07")


@pytest.mark.parametrize("bad", [None, 3, b"query", ["query"]])
def test_tr_of_something_other_than_a_string_is_a_clear_input_error(bad):
    with pytest.raises(al.AttentionInputError, match=f"tr\\(\\) translates one string.*got {type(bad).__name__}"):
        al.tr(bad)


def test_the_catalogs_compile_into_mo_files_that_gettext_reads(tmp_path):
    import gettext
    import shutil

    from attnlab._catalogs import compile_all

    folder = tmp_path / "zh_CN" / "LC_MESSAGES"
    folder.mkdir(parents=True)
    shutil.copy(PAGES_PO, folder / "pages.po")
    assert compile_all(tmp_path) == [folder / "pages.mo"]
    with (folder / "pages.mo").open("rb") as handle:
        compiled = gettext.GNUTranslations(handle)
    for m in entries():
        assert compiled.gettext(m.msgid) == m.msgstr
    assert compile_all(tmp_path) == [], "an up-to-date .mo is left alone"
