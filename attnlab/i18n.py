"""The language of attnlab's messages: checker verdicts, widget labels, figure labels, errors.

English is the default. ``attnlab.set_language("zh_CN")`` (or the environment variable
``ATTNLAB_LANG=zh_CN``, read at import) switches to Chinese; ``set_language("en")`` back.
Modules mark their user-facing text with ``_("...")`` (translated when it is shown) and build the
variable parts with ``str.format`` after translation, so that a translator sees whole sentences:

    from .i18n import _
    raise AttentionInputError(_("q and k must have the same width d_k; got {q} and {k}").format(...))

The pages' own code cells (figure labels, printed tables and sentences) have a second catalog,
``attnlab/locale/<lang>/LC_MESSAGES/pages.po``, read through ``page_text`` (``attnlab.tr``):

    ax.set_xlabel(al.tr("key position"))
    print(al.tr("worst error {err:.1e}").format(err=err))

``tools/compile_messages.py extract`` collects the ``tr("...")`` literals of every page into it.

The catalogs are ``attnlab/locale/<lang>/LC_MESSAGES/attnlab.po``; the compiled ``.mo`` files are
written by ``tools/compile_messages.py`` (run by ``make``) and by the package build. Where a
``.mo`` is missing or older than its ``.po`` (an edited checkout), the ``.po`` is compiled in memory
with babel; without babel, an older ``.mo`` is used as it is, and without any ``.mo`` the messages
stay English; a warning says which. Error classes and their meaning never depend on the language.
"""
from __future__ import annotations

import gettext
import io
import os
import warnings
from pathlib import Path

DOMAIN = "attnlab"
PAGES_DOMAIN = "pages"                  # the strings of the pages' own code cells (page_text)
LOCALE_DIR = Path(__file__).resolve().parent / "locale"
LANGUAGES = ("en", "zh_CN")
_ALIASES = {"zh": "zh_CN", "zh-CN": "zh_CN", "zh_cn": "zh_CN", "en_US": "en", "en-US": "en", "C": "en"}

_language = "en"
_translation: gettext.NullTranslations = gettext.NullTranslations()
_page_translation: gettext.NullTranslations = gettext.NullTranslations()


# An installed wheel writes the .po a moment after its .mo; an edit of the .po comes seconds later.
_INSTALL_SKEW_S = 2.0


def _read_mo(mo: Path) -> gettext.GNUTranslations:
    with mo.open("rb") as handle:
        return gettext.GNUTranslations(handle)


def _catalog(lang: str, domain: str = DOMAIN) -> gettext.NullTranslations:
    folder = LOCALE_DIR / lang / "LC_MESSAGES"
    po, mo = folder / f"{domain}.po", folder / f"{domain}.mo"
    if mo.exists() and (not po.exists() or mo.stat().st_mtime + _INSTALL_SKEW_S >= po.stat().st_mtime):
        return _read_mo(mo)
    if not po.exists():
        return gettext.NullTranslations()
    try:
        from babel.messages import mofile, pofile
    except ImportError:
        if mo.exists():
            warnings.warn(f"attnlab: {mo} is older than {po.name} and babel is not installed to compile it; "
                          "showing the older translations (run tools/compile_messages.py)", stacklevel=3)
            return _read_mo(mo)
        warnings.warn(f"attnlab: {mo} is missing and babel is not installed to compile {po.name}; "
                      "messages stay in English (run tools/compile_messages.py)", stacklevel=3)
        return gettext.NullTranslations()
    with po.open("rb") as handle:
        catalog = pofile.read_po(handle, locale=lang)
    buffer = io.BytesIO()
    mofile.write_mo(buffer, catalog)
    buffer.seek(0)
    return gettext.GNUTranslations(buffer)


def set_language(lang: str) -> None:
    """Show attnlab's messages in ``lang``: "en" (default) or "zh_CN"."""
    global _language, _translation, _page_translation
    code = _ALIASES.get(lang, lang)
    if code not in LANGUAGES:
        raise ValueError(f"language must be one of {', '.join(LANGUAGES)}; got {lang!r}")
    _translation = gettext.NullTranslations() if code == "en" else _catalog(code)
    _page_translation = gettext.NullTranslations() if code == "en" else _catalog(code, PAGES_DOMAIN)
    _language = code


def get_language() -> str:
    """The language attnlab's messages are shown in now."""
    return _language


def _(message: str) -> str:
    """``message`` in the current language (itself where no translation exists)."""
    return _translation.gettext(message)


def page_text(message: str) -> str:
    """A string of a page's own code (a figure label, a table header, a printed sentence) in the
    current language, from the ``pages`` catalog; English, and ``message`` itself, by default.

    Format the variable parts after translating: ``tr("worst error {err}").format(err=err)``.
    """
    if not isinstance(message, str):
        from .errors import AttentionInputError

        raise AttentionInputError(_("tr() translates one string, the English text written in the page; "
                                    "got {kind}").format(kind=type(message).__name__))
    return _page_translation.gettext(message)


tr = page_text


def page_text_of_file(message: str) -> str:
    """:func:`page_text` for a string a page reads from a file of the book rather than writes in a
    cell (checking.md's summary of each test module, its docstring's first paragraph): its entry
    in the ``pages`` catalog is extracted from that file, not from a ``tr("...")`` literal."""
    return page_text(message)


def page_table(table):
    """A pandas table of a page with its labels in the current language: column and row labels and
    the names of its index and column levels (a Series: its name too), each string through
    :func:`page_text` (a label the catalog lacks, such as "float32", stays as it is).

    English: ``table`` itself, unchanged. The catalog holds the literal keys written in the cell
    that calls ``tr_table`` (see ``table_labels`` in tools/compile_messages.py).
    """
    if _language == "en":
        return table

    def label(value):
        return page_text(value) if isinstance(value, str) else value

    table = table.copy()
    if hasattr(table, "columns"):
        table = table.rename(columns=label, index=label)
        table.columns = table.columns.set_names([label(n) for n in table.columns.names])
    else:
        table = table.rename(index=label)
        table.name = label(table.name)
    table.index = table.index.set_names([label(n) for n in table.index.names])
    return table


tr_table = page_table


def N_(message: str) -> str:
    """Mark a message for translation without translating it yet (for tables built at import)."""
    return message


def _language_from_environment() -> None:
    lang = os.environ.get("ATTNLAB_LANG", "").split(".")[0]
    if not lang:
        return
    try:
        set_language(lang)
    except ValueError:
        warnings.warn(f"attnlab: ATTNLAB_LANG={lang!r} is not one of {', '.join(LANGUAGES)}; using English",
                      stacklevel=2)


_language_from_environment()
