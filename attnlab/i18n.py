"""The language of attnlab's messages: checker verdicts, widget labels, figure labels, errors.

English is the default. ``attnlab.set_language("zh_CN")`` (or the environment variable
``ATTNLAB_LANG=zh_CN``, read at import) switches to Chinese; ``set_language("en")`` back.
Modules mark their user-facing text with ``_("...")`` (translated when it is shown) and build the
variable parts with ``str.format`` after translation, so that a translator sees whole sentences:

    from .i18n import _
    raise AttentionInputError(_("q and k must have the same width d_k; got {q} and {k}").format(...))

The pages' own code cells (figure labels, printed tables and sentences) are plain English Python;
their text is translated where it leaves the code (``attnlab.edge``): through a second catalog,
``attnlab/locale/<lang>/LC_MESSAGES/pages.po``, read by ``page_text``, which finds a shown text
there as a message or as the formatted output of a template (``attnlab._shown``):

    page_text("its weights")              # "它的权重" under zh_CN
    page_text("worst error 3.1e-16")      # from the template "worst error {err:.1e}"

``python -m bookbuild translations`` collects the pages' shown strings into it (``bookbuild.i18n``).

The catalogs are ``attnlab/locale/<lang>/LC_MESSAGES/attnlab.po``; the compiled ``.mo`` files are
written by ``python -m bookbuild.i18n.catalogs`` (run by ``make``) and by the package build (both
through ``attnlab._catalogs``). Where a
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

from ._catalogs import compiled
from ._shown import Index

DOMAIN = "attnlab"
PAGES_DOMAIN = "pages"                  # the strings of the pages' own code cells (page_text)
LOCALE_DIR = Path(__file__).resolve().parent / "locale"
LANGUAGES = ("en", "zh_CN")
_ALIASES = {"zh": "zh_CN", "zh-CN": "zh_CN", "zh_cn": "zh_CN", "en_US": "en", "en-US": "en", "C": "en"}

_language = "en"
_translation: gettext.NullTranslations = gettext.NullTranslations()
_page_translation: gettext.NullTranslations = gettext.NullTranslations()
_page_index: Index | None = None          # built from _page_translation on first use


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
        return gettext.GNUTranslations(io.BytesIO(compiled(po)))
    except ImportError:
        if mo.exists():
            warnings.warn(f"attnlab: {mo} is older than {po.name} and babel is not installed to compile it; "
                          "showing the older translations (run python -m bookbuild.i18n.catalogs)", stacklevel=3)
            return _read_mo(mo)
        warnings.warn(f"attnlab: {mo} is missing and babel is not installed to compile {po.name}; "
                      "messages stay in English (run python -m bookbuild.i18n.catalogs)", stacklevel=3)
        return gettext.NullTranslations()


def set_language(lang: str) -> None:
    """Show attnlab's messages in ``lang``: "en" (default) or "zh_CN"."""
    global _language, _translation, _page_translation, _page_index
    code = _ALIASES.get(lang, lang)
    if code not in LANGUAGES:
        raise ValueError(f"language must be one of {', '.join(LANGUAGES)}; got {lang!r}")
    _translation = gettext.NullTranslations() if code == "en" else _catalog(code)
    _page_translation = gettext.NullTranslations() if code == "en" else _catalog(code, PAGES_DOMAIN)
    _page_index = None
    _language = code


def get_language() -> str:
    """The language attnlab's messages are shown in now."""
    return _language


def _(message: str) -> str:
    """``message`` in the current language (itself where no translation exists)."""
    return _translation.gettext(message)


def page_text(message: str) -> str:
    """A text a page shows (a figure label, a table header, a printed line) in the current language,
    from the ``pages`` catalog; English, and ``message`` itself, by default and for any text the
    catalog does not hold.

    ``message`` is what the page's code wrote (``"its weights"``, ``"worst error {err:.1e}"``) or
    what its formatting produced (``"worst error 3.1e-16"``): see ``attnlab._shown``.
    """
    global _page_index
    if not isinstance(message, str):
        from .errors import AttentionInputError

        raise AttentionInputError(_("tr() translates one string, the English text written in the page; "
                                    "got {kind}").format(kind=type(message).__name__))
    if _language == "en" or not message.strip():
        return message
    if _page_index is None:
        _page_index = Index(getattr(_page_translation, "_catalog", {}))    # a GNUTranslations' messages
    return _page_index.translate(message)


tr = page_text


def page_text_of_file(message: str) -> str:
    """:func:`page_text` for a string a page reads from a file of the book rather than writes in a
    cell (checking.md's summary of each test module, its docstring's first paragraph): its entry
    in the ``pages`` catalog is extracted from that file, not from a ``tr("...")`` literal."""
    return page_text(message)


def page_table(table):
    """A pandas table of a page in the current language: column and row labels, the names of its
    index and column levels (a Series: its name too) and its string cells, each through
    :func:`page_text` (a string the catalog lacks, such as "float32", stays as it is).

    English: ``table`` itself, unchanged. ``attnlab.edge`` applies it to every table a page displays.
    """
    if _language == "en":
        return table

    def label(value):
        return page_text(value) if isinstance(value, str) else value

    table = table.copy()
    if hasattr(table, "columns"):
        table = table.rename(columns=label, index=label)
        table.columns = table.columns.set_names([label(n) for n in table.columns.names])
        table = table.map(label)
    else:
        table = table.rename(index=label).map(label)
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
