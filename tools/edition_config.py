"""Write the Jupyter Book config of another edition or builder from _config.yml.

Jupyter Book 1 takes Sphinx options only from its config file, so the Chinese edition and the
message extraction each get a config generated from the English one (never edited by hand):

    python tools/edition_config.py zh    -> _config_zh.yml, _toc_zh.yml, _toc_student_zh.yml
    python tools/edition_config.py pot   -> _config_pot.yml, _toc_pot.yml  (make translations: one .pot per page)

The Chinese edition executes its pages with ATTNLAB_LANG=zh_CN into its own execution cache,
because attnlab's messages, figure labels and widget texts in the outputs are Chinese.
"""
from __future__ import annotations

import copy
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
LOCALE_DIR = "locale/"
ZH_CACHE = "_build/zh/.jupyter_cache"
ZH_PDF = "attention-computed-zh.pdf"
ZH_BIB = "_build/zh/references.bib"              # written from references.bib and ZH_BIB_FIELDS
ZH_BIB_FIELDS = "locale/zh_CN/references.yml"


def _sphinx_config(config: dict) -> dict:
    return config.setdefault("sphinx", {}).setdefault("config", {})


def pot_config(base: dict) -> dict:
    config = copy.deepcopy(base)
    sphinx = _sphinx_config(config)
    sphinx["gettext_compact"] = False          # one catalog per page, named after it
    sphinx["gettext_uuid"] = False
    sphinx["gettext_location"] = False        # line numbers would churn every catalog on each edit
    # the pages execute (from the English cache): a figure's caption, written in the cell's
    # metadata, exists only once the cell has an output (other output text is not extracted)
    return config


def zh_config(base: dict) -> dict:
    config = pot_config(base)
    config["title"] = "注意力，算出来"
    config["author"] = "attnlab 编写组"          # the footer and the PDF title page
    config["execute"]["cache"] = ZH_CACHE
    sphinx = _sphinx_config(config)
    sphinx["language"] = "zh_CN"
    config["bibtex_bibfiles"] = [ZH_BIB]      # the source texts described in Chinese
    sphinx["locale_dirs"] = [LOCALE_DIR]
    sphinx.setdefault("html_context", {})["edition"] = "zh"
    sphinx["pdf_download_file"] = f"_build/pdf/{ZH_PDF}"   # its own PDF, once built
    # the interface texts of myst-nb and sphinx-togglebutton, which have no Chinese catalogs
    # ({type} would be filled with an English word; the book hides only inputs)
    sphinx["nb_code_prompt_show"] = "显示代码"
    sphinx["nb_code_prompt_hide"] = "隐藏代码"
    sphinx["togglebutton_hint"] = "点击显示"
    sphinx["togglebutton_hint_hide"] = "点击隐藏"
    sphinx["pdf_download_toc"] = "_toc_zh.yml"
    extensions = config["sphinx"].setdefault("local_extensions", {})
    extensions.pop("cjk_glosses", None)      # the whole page is Chinese: <html lang="zh-CN">
    zh_latex(config, sphinx)
    return config


# "第 3 章" above a numbered chapter's title, where LaTeX's report class writes "Chapter 3"
ZH_CHAPTER_HEAD = r"""\makeatletter
\def\@makechapterhead#1{\vspace*{30\p@}{\parindent\z@\raggedright\normalfont
  \ifnum\c@secnumdepth>\m@ne\huge\bfseries 第\,\thechapter\,章\par\nobreak\vskip 16\p@\fi
  \interlinepenalty\@M\Huge\bfseries #1\par\nobreak\vskip 30\p@}}
\makeatother"""


def zh_latex(config: dict, sphinx: dict) -> None:
    """make pdf-zh: its own file, Chinese quotes and captions, the numbered part named 章节."""
    config.setdefault("latex", {}).setdefault("latex_documents", {})["targetname"] = ZH_PDF.replace(".pdf", ".tex")
    elements = sphinx["latex_elements"] = dict(sphinx.get("latex_elements", {}))
    # the English edition keeps quotes and dashes Western; Chinese text wants them full-width
    elements["fontpkg"] = "\n".join(line for line in elements.get("fontpkg", "").splitlines()
                                    if "xeCJKDeclareCharClass" not in line and "quotes, dashes" not in line)
    captions = {"contentsname": "目录", "figurename": "图", "tablename": "表", "bibname": "参考文献",
                "indexname": "索引", "partname": "部分"}
    renames = "".join(f"\\renewcommand{{\\{name}}}{{{text}}}" for name, text in captions.items())
    # after babel has set its English captions at \begin{document}
    elements["preamble"] = ("\\newcommand\\attnNumberedPart{章节}\n" + elements.get("preamble", "")
                            + f"\n\\AtBeginDocument{{{renames}}}\n" + ZH_CHAPTER_HEAD)
    # makeindex splits UTF-8 characters (its letter headings of Chinese terms are invalid bytes),
    # and an index of English-sorted Chinese terms would not help: the Chinese PDF has none
    elements["makeindex"] = ""
    elements["printindex"] = ""


def translated_bib(bib: str, fields: dict[str, dict[str, str]]) -> str:
    """references.bib with the named entries' fields replaced (one ``  name = {value},`` line each)."""
    out, key = [], None
    for line in bib.splitlines():
        if line.startswith("@"):
            key = line[line.index("{") + 1:].rstrip(",").strip()
        name = line.split("=", 1)[0].strip() if "=" in line and key in fields else None
        if name in fields.get(key, {}):
            line = f"{line.split('=', 1)[0]}= {{{fields[key][name]}}},"
        out.append(line)
    missing = [f"{k}.{n}" for k, names in fields.items() for n in names
               if f"= {{{names[n]}}}," not in "\n".join(out)]
    if missing:
        raise SystemExit(f"{ZH_BIB_FIELDS}: no such entry or field in references.bib: {', '.join(missing)}")
    return "\n".join(out) + "\n"


def write_zh_bib() -> None:
    fields = yaml.safe_load((ROOT / ZH_BIB_FIELDS).read_text(encoding="utf-8"))
    bib = translated_bib((ROOT / "references.bib").read_text(encoding="utf-8"), fields)
    (ROOT / ZH_BIB).parent.mkdir(parents=True, exist_ok=True)
    (ROOT / ZH_BIB).write_text(f"% Generated by tools/edition_config.py zh from references.bib and {ZH_BIB_FIELDS}\n"
                               + bib, encoding="utf-8")


def translated_toc(toc: dict, catalog: Path) -> dict:
    """The table of contents with its part captions translated from the root page's catalog.

    (Sphinx translates the captions of toctrees written in a page, but the ones Jupyter Book
    builds from _toc.yml are added too late for that.)
    """
    import polib

    done = {e.msgid: e.msgstr for e in polib.pofile(str(catalog)) if e.translated() and not e.fuzzy} \
        if catalog.exists() else {}
    toc = copy.deepcopy(toc)
    for part in toc.get("parts", []):
        part["caption"] = done.get(part["caption"], part["caption"])
    return toc


def write_zh_tocs() -> None:
    catalog = ROOT / LOCALE_DIR / "zh_CN" / "LC_MESSAGES" / "intro.po"
    for name in ("_toc", "_toc_student"):
        toc = yaml.safe_load((ROOT / f"{name}.yml").read_text(encoding="utf-8"))
        header = f"# Generated by tools/edition_config.py zh from {name}.yml: do not edit.\n"
        (ROOT / f"{name}_zh.yml").write_text(
            header + yaml.safe_dump(translated_toc(toc, catalog), allow_unicode=True, sort_keys=False),
            encoding="utf-8")


def write_pot_toc() -> None:
    """The full table of contents plus the student edition's stand-in for the solutions, so that
    one extraction covers the pages of both editions."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    student = yaml.safe_load((ROOT / "_toc_student.yml").read_text(encoding="utf-8"))
    full = {c["file"] for part in toc["parts"] for c in part["chapters"]}
    extra = [c for part in student["parts"] for c in part["chapters"] if c["file"] not in full]
    toc["parts"][-1]["chapters"] += extra
    header = "# Generated by tools/edition_config.py pot from _toc.yml and _toc_student.yml: do not edit.\n"
    (ROOT / "_toc_pot.yml").write_text(header + yaml.safe_dump(toc, allow_unicode=True, sort_keys=False),
                                       encoding="utf-8")


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in ("zh", "pot"):
        print(__doc__, file=sys.stderr)
        return 2
    base = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    config = zh_config(base) if argv[0] == "zh" else pot_config(base)
    out = ROOT / f"_config_{argv[0]}.yml"
    header = f"# Generated by tools/edition_config.py {argv[0]} from _config.yml: do not edit.\n"
    out.write_text(header + yaml.safe_dump(config, allow_unicode=True, sort_keys=False), encoding="utf-8")
    if argv[0] == "zh":
        write_zh_tocs()
        write_zh_bib()
    else:
        write_pot_toc()
    print(out.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
