"""Workaround for the themes' incomplete Chinese catalogs (no issue filed upstream): pydata-sphinx-theme and
Sphinx leave "Search...", "Color mode", "Toggle primary sidebar", "Link to this heading" and
"© Copyright" in English, and sphinx-book-theme's zh_CN catalog says 列印成 PDF (Taiwan usage).
Remove when those catalogs carry the strings of ``THEME_STRINGS`` in mainland usage.

In the Chinese edition the table below is written over the loaded translations (the ``sphinx`` and
``booktheme`` catalogs), the search box's placeholder is set for every page, and the few strings
sphinx-book-theme writes untranslatable into its templates (``HARD_CODED``) are replaced in the
written pages.
"""
from __future__ import annotations

from pathlib import Path

from sphinx import locale

THEME_STRINGS = {
    "Print to PDF": "打印为 PDF",
    "Search": "搜索",
    "Color mode": "配色模式",
    "Light": "亮色",
    "Dark": "暗色",
    "System Settings": "跟随系统",
    "Toggle primary sidebar": "切换主侧边栏",
    "Toggle secondary sidebar": "切换次侧边栏",
    "Main": "主导航",
    "Link to this heading": "链接到本标题",
    "Link to this equation": "链接到本公式",
    "Link to this code": "链接到本代码",
    "Link to this image": "链接到本图",
    "Link to this table": "链接到本表",
    "Link to this definition": "链接到本定义",
    "Back to top": "回到顶部",
    "Skip to main content": "跳到正文",
    "© Copyright %(copyright)s.": "© %(copyright)s",
    "Copyright %(copyright)s": "%(copyright)s",
}
SEARCH_PLACEHOLDER = "搜索……"
HARD_CODED = {                                          # sphinx-book-theme's components, as written
    'title="Toggle primary sidebar"': 'title="切换主侧边栏"',
    'title="Toggle secondary sidebar"': 'title="切换次侧边栏"',
    'aria-label="Main"': 'aria-label="主导航"',
    '<nav aria-label="Page">': '<nav aria-label="本页">',   # sphinx-book-theme's layout.html
    "作者： ": "作者：",                                 # its catalog's "By", then a space in the template
}


def is_chinese(app) -> bool:
    return (app.config.language or "").startswith("zh")


def override_translations(app) -> None:
    if not is_chinese(app):
        return
    for (_namespace, catalog), translator in locale.translators.items():
        if catalog in ("sphinx", "booktheme") and hasattr(translator, "_catalog"):
            translator._catalog.update(THEME_STRINGS)


def search_placeholder(app, pagename, templatename, context, doctree) -> None:
    if is_chinese(app):
        context["theme_search_bar_text"] = SEARCH_PLACEHOLDER


def replace_hard_coded(app, exception) -> None:
    if exception is not None or not is_chinese(app) or app.builder.format != "html":
        return
    for page in Path(app.outdir).rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        fixed = html
        for english, chinese in HARD_CODED.items():
            fixed = fixed.replace(english, chinese)
        if fixed != html:
            page.write_text(fixed, encoding="utf-8")


def setup(app):
    app.connect("builder-inited", override_translations)
    app.connect("html-page-context", search_placeholder, priority=900)   # after sphinx-book-theme's
    app.connect("build-finished", replace_hard_coded)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
