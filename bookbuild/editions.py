"""The book's editions as data: language (en, zh_CN) x audience (full, student) x format (html, pdf).

Everything a build needs follows from an :class:`Edition`: its Jupyter Book config (``_config.yml``
for English; for Chinese one generated from it, ``_config_zh.yml``), its table of contents
(``_toc.yml``; the student one generated from it without the solution pages; the Chinese ones with
their part captions translated), its execution cache (one per language: the pages' outputs differ
by language, not by audience or format), the folder Jupyter Book writes into and where the result
lands. :func:`build` builds any of them; a new edition is one more line in :data:`EDITIONS`.

Jupyter Book 1 takes Sphinx options only from its config file, so the generated configs and tables
of contents are written beside ``_config.yml`` (git ignores them) and never edited by hand.
"""
from __future__ import annotations

import copy
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from .pages import ROOT

BUILD = ROOT / "_build"
LOCALE_DIR = "locale/"
ZH_CACHE = "_build/zh/.jupyter_cache"
ZH_BIB = "_build/zh/references.bib"              # written from references.bib and ZH_BIB_FIELDS
ZH_BIB_FIELDS = "locale/zh_CN/references.yml"
JB_FLAGS = ["-W", "-n", "--keep-going"]
PDF_NAME = "attention-computed"


@dataclass(frozen=True)
class Edition:
    lang: str = "en"            # "en" or "zh_CN"
    audience: str = "full"      # "full" or "student" (no solution pages)
    fmt: str = "html"           # "html" or "pdf"

    def __post_init__(self):
        for name, value, allowed in (("lang", self.lang, ("en", "zh_CN")), ("fmt", self.fmt, ("html", "pdf")),
                                     ("audience", self.audience, ("full", "student"))):
            if value not in allowed:
                raise ValueError(f"an edition's {name} is one of {', '.join(allowed)}; got {value!r}")

    @property
    def zh(self) -> bool:
        return self.lang == "zh_CN"

    @property
    def name(self) -> str:
        """"en", "zh", "en-student", "zh-student-pdf", ..."""
        return "-".join([("zh" if self.zh else "en"), *(["student"] if self.audience == "student" else []),
                         *(["pdf"] if self.fmt == "pdf" else [])])

    @property
    def config_file(self) -> str:
        """_config.yml as written for English; generated for Chinese, and for a student PDF (its own file name)."""
        if self.audience == "student" and self.fmt == "pdf":
            return f"_config_{self.name}.yml"
        return "_config_zh.yml" if self.zh else "_config.yml"

    @property
    def toc_file(self) -> str:
        return "_toc" + ("_student" if self.audience == "student" else "") + ("_zh" if self.zh else "") + ".yml"

    @property
    def cache(self) -> Path:
        return ROOT / (ZH_CACHE if self.zh else base_config()["execute"]["cache"])

    @property
    def work(self) -> Path:
        """Jupyter Book's --path-output: it writes the build into ``work / "_build"``."""
        if self.audience == "student":
            return (BUILD / "zh" if self.zh else BUILD) / "student-src"
        return BUILD / "zh" if self.zh else ROOT

    @property
    def pdf_stem(self) -> str:
        return PDF_NAME + ("-zh" if self.zh else "") + ("-student" if self.audience == "student" else "")

    @property
    def output(self) -> Path:
        """Where the finished edition lands."""
        if self.fmt == "pdf":
            return BUILD / "pdf" / f"{self.pdf_stem}.pdf"
        return (BUILD / "zh" if self.zh else BUILD) / ("student" if self.audience == "student" else "") / "html"

    @property
    def environment(self) -> dict:
        """What the pages execute with: attnlab's language (the outputs of the Chinese edition are Chinese)."""
        return {**os.environ, "ATTNLAB_LANG": self.lang}


# Every edition the Makefile builds, by its target.
EDITIONS = {
    "book": Edition(),
    "book-zh": Edition("zh_CN"),
    "student-book": Edition(audience="student"),
    "student-book-zh": Edition("zh_CN", "student"),
    "pdf": Edition(fmt="pdf"),
    "pdf-zh": Edition("zh_CN", fmt="pdf"),
}


# --- configs -------------------------------------------------------------------------------------

def base_config() -> dict:
    return yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))


def _sphinx_config(config: dict) -> dict:
    return config.setdefault("sphinx", {}).setdefault("config", {})


def pot_config(base: dict) -> dict:
    """The config of the message extraction (``make translations``): one .pot per page."""
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
    sphinx["pdf_download_file"] = f"_build/pdf/{PDF_NAME}-zh.pdf"   # its own PDF, once built
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
    """The Chinese PDF: its own file, Chinese quotes and captions, the numbered part named 章节."""
    config.setdefault("latex", {}).setdefault("latex_documents", {})["targetname"] = f"{PDF_NAME}-zh.tex"
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


def edition_config(edition: Edition) -> dict:
    """The Jupyter Book config of ``edition``: a student PDF gets its own file name."""
    config = zh_config(base_config()) if edition.zh else base_config()
    if edition.audience == "student":
        config.setdefault("latex", {}).setdefault("latex_documents", {})["targetname"] = f"{edition.pdf_stem}.tex"
    return config


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
    (ROOT / ZH_BIB).write_text(f"% Generated by bookbuild.editions from references.bib and {ZH_BIB_FIELDS}\n"
                               + bib, encoding="utf-8")


# --- tables of contents --------------------------------------------------------------------------

def full_toc() -> dict:
    return yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))


def student_toc(toc: dict) -> dict:
    """The toc without the solution pages; solutions_withheld.md stands in for them (it defines the
    same labels, so every exercise's "Solution" link resolves and the edition builds with -W -n)."""
    toc = copy.deepcopy(toc)
    parts = []
    for part in toc["parts"]:
        chapters = [c for c in part["chapters"] if not c["file"].startswith("solutions/")]
        if chapters:
            parts.append({**part, "chapters": chapters})
        else:                                     # the solutions' part: its stand-in ends the part before
            parts[-1]["chapters"].append({"file": "solutions_withheld"})
    toc["parts"] = parts
    return toc


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


def edition_toc(edition: Edition) -> dict:
    toc = full_toc()
    if edition.audience == "student":
        toc = student_toc(toc)
    if edition.zh:
        toc = translated_toc(toc, ROOT / LOCALE_DIR / "zh_CN" / "LC_MESSAGES" / "intro.po")
    return toc


def pot_toc() -> dict:
    """The full table of contents plus the student edition's stand-in for the solutions, so that
    one extraction covers the pages of both editions."""
    toc = full_toc()
    toc["parts"][-1]["chapters"] += [{"file": "solutions_withheld"}]
    return toc


def _write(name: str, data: dict, source: str) -> None:
    header = f"# Generated by bookbuild.editions from {source}: do not edit.\n"
    (ROOT / name).write_text(header + yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")


def write_files(edition: Edition) -> None:
    """The generated config and toc ``edition`` builds from (English full: the files as written)."""
    if edition.config_file != "_config.yml":
        _write(edition.config_file, edition_config(edition), "_config.yml")
    if edition.zh:
        write_zh_bib()
    if edition.toc_file != "_toc.yml":
        _write(edition.toc_file, edition_toc(edition), "_toc.yml")


def write_pot_files() -> None:
    _write("_config_pot.yml", pot_config(base_config()), "_config.yml")
    _write("_toc_pot.yml", pot_toc(), "_toc.yml")


# --- building ------------------------------------------------------------------------------------

def prepare(edition: Edition) -> None:
    """Assets, message catalogs, the generated config and toc of ``edition``."""
    from attnlab._catalogs import compile_all

    from . import vendor
    compile_all(ROOT / "attnlab" / "locale")   # before vendoring: the attnlab wheel served to Pyodide carries them
    if edition.fmt == "html":
        vendor.main()
    else:
        (ROOT / "_vendor").mkdir(exist_ok=True)   # html_static_path names it (a warning under -W if absent)
    write_files(edition)


def execute(edition: Edition) -> None:
    """The pages of ``edition`` its cache lacks, several at once (``bookbuild.execute``)."""
    done = subprocess.run([sys.executable, "-m", "bookbuild.execute", "--config", edition.config_file,
                           "--toc", edition.toc_file], cwd=ROOT, env=edition.environment)
    if done.returncode:
        raise SystemExit(f"executing the pages of the {edition.name} edition failed (above)")


def sphinx_command(edition: Edition) -> list[str]:
    command = [str(Path(sys.executable).parent / "jupyter-book"), "build", ".", *JB_FLAGS,
               "--config", edition.config_file, "--toc", edition.toc_file]
    if edition.work != ROOT:
        command += ["--path-output", str(edition.work.relative_to(ROOT))]
    return command + (["--builder", "pdflatex"] if edition.fmt == "pdf" else [])


def _clean(edition: Edition) -> None:
    """Sphinx always starts clean: an incremental -W build can pass without re-reading pages."""
    out = edition.work / "_build"
    for name in (edition.fmt if edition.fmt == "html" else "latex", ".doctrees", "jupyter_execute"):
        shutil.rmtree(out / name, ignore_errors=True)


def _finish(edition: Edition) -> None:
    built = edition.work / "_build"
    edition.output.parent.mkdir(parents=True, exist_ok=True)
    if edition.fmt == "pdf":
        name = edition_config(edition)["latex"]["latex_documents"]["targetname"][:-4]
        shutil.copy(built / "latex" / f"{name}.pdf", edition.output)
    elif edition.output != built / "html":
        shutil.rmtree(edition.output, ignore_errors=True)
        shutil.copytree(built / "html", edition.output)
    print(f"The {edition.name} edition: {edition.output}" + ("/index.html" if edition.fmt == "html" else ""))


def _latex_errors(edition: Edition) -> str:
    """The errors of a failed PDF build: each ``!`` line of the LaTeX log and the four after it."""
    name = edition_config(edition)["latex"]["latex_documents"]["targetname"][:-4]
    log = edition.work / "_build" / "latex" / f"{name}.log"
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    return "\n".join(line for i, start in enumerate(lines) if start.startswith("!") for line in lines[i:i + 5])[:4000]


def build(*editions: Edition) -> None:
    """Build ``editions``: each one's pages execute first (several at once), then the Sphinx builds
    run side by side (one core each), the first one's output shown as it goes, the others' at the end."""
    for edition in editions:
        prepare(edition)
        execute(edition)
        _clean(edition)
    env_of = lambda e: {**e.environment, "LATEXMKOPTS": "-silent",                        # noqa: E731
                        **({"EDITION_TWIN": "building"} if len(editions) > 1 else {})}
    logs = {e: (e.work / "_build" / f"{e.name}.log") for e in editions[1:]}
    running = []
    for edition in editions[1:]:
        logs[edition].parent.mkdir(parents=True, exist_ok=True)
        running.append((edition, subprocess.Popen(sphinx_command(edition), cwd=ROOT, env=env_of(edition),
                                                  stdout=logs[edition].open("w"), stderr=subprocess.STDOUT)))
    first = editions[0]
    results = [(first, subprocess.run(sphinx_command(first), cwd=ROOT, env=env_of(first)).returncode)]
    for edition, process in running:
        results.append((edition, process.wait()))
        print(f"--- the {edition.name} edition's build (exit {results[-1][1]}):")
        print("\n".join(logs[edition].read_text(errors="replace").splitlines()[-40:]))
    failed = [e for e, code in results if code]
    for edition in failed:
        if edition.fmt == "pdf":
            print(_latex_errors(edition), file=sys.stderr)       # -silent: the errors are in the log
    if failed:
        raise SystemExit(f"the build of {', '.join(e.name for e in failed)} failed")
    for edition in editions:
        _finish(edition)


def build_page(page: str, edition: Edition = Edition()) -> int:
    """One page alone, as the book builds it, through a table of contents of that page alone (Jupyter
    Book's own page mode reads every file beside the page). Links to other pages warn: they are not
    in this build."""
    path = ROOT / page
    if not path.is_file():
        raise SystemExit(f"make page PAGE=chapters/01_qkv.md: no page {page}")
    prepare(edition)
    out = BUILD / ("pages-zh" if edition.zh else "pages") / path.stem
    out.mkdir(parents=True, exist_ok=True)
    (out / "_toc.yml").write_text(f"format: jb-book\nroot: {Path(page).with_suffix('').as_posix()}\n")
    command = [str(Path(sys.executable).parent / "jupyter-book"), "build", ".", "--config", edition.config_file,
               "--toc", str((out / "_toc.yml").relative_to(ROOT)), *JB_FLAGS,
               "--path-output", str(out.relative_to(ROOT))]
    return subprocess.run(command, cwd=ROOT, env=edition.environment).returncode
