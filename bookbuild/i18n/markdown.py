"""Translate the MyST Markdown of a page through its gettext catalog, as the Chinese edition does.

The Chinese edition's catalogs (``locale/<lang>/LC_MESSAGES/<page>.po``) hold every translatable
piece of a page: headings, paragraphs (in list items, block quotes, table cells and directive
bodies too), exercise, proof and dropdown titles, and display math (whose ``\text{}`` may be
translated). Sphinx finds a piece's translation by its source text with newlines joined by
spaces, stripped (math by its source as it is); so does :func:`translate_markdown`, which
replaces each piece of a Markdown text by its ``msgstr`` and leaves everything else byte for
byte: targets, code, directive fences and options. A piece the catalog lacks, or whose entry is
fuzzy or untranslated, stays English, as it does in the Chinese book.

The Markdown is parsed with myst-parser's own markdown-it parser (the book's extensions), and each
piece is replaced by its line range (``token.map``); a directive's body is MyST of its own and is
translated recursively. Roles stay as they are (the translations keep them), so the conversion to
plain Jupyter Markdown that follows (bookbuild.notebooks) treats both languages alike.
"""
from __future__ import annotations

import functools
import pathlib
import re

import polib
import yaml
from markdown_it.renderer import RendererHTML
from myst_parser.config.main import MdParserConfig
from myst_parser.parsers.mdit import create_md_parser

from ..pages import ROOT

LANGUAGES = ("zh_CN",)
EXTENSIONS = set(yaml.safe_load((ROOT / "_config.yml").read_text())["parse"]["myst_enable_extensions"])
# Directives whose body is not MyST prose, and whose argument is a path, a label or a language.
LITERAL = {"code-cell", "code-block", "code", "sourcecode", "raw", "literalinclude", "include",
           "eval-rst", "glue", "glue:any", "glue:figure", "glue:math", "image", "bibliography", "toctree",
           "tableofcontents", "mermaid"}
LABEL_ARGUMENT = {"solution", "solution-start", "solution-end", "exercise-end", "figure"}
_DIRECTIVE = re.compile(r"\{(?P<name>[\w:-]+)\}[ \t]*(?P<arg>.*)")
_PROOF_LABEL = re.compile(r"^(?:Proof\.|证明[：:.．。]?)\s*")      # sphinx-proof's "Proof." in the first paragraph


def catalog_path(page: pathlib.Path, lang: str) -> pathlib.Path:
    """``chapters/01_qkv.md`` -> ``locale/<lang>/LC_MESSAGES/chapters/01_qkv.po``."""
    if lang not in LANGUAGES:
        raise ValueError(f"no catalogs for language {lang!r}; the book is translated into {', '.join(LANGUAGES)}")
    try:
        relative = page.resolve().relative_to(ROOT)
    except ValueError:
        raise ValueError(f"{page} is not a page of the book (not under {ROOT})") from None
    return ROOT / "locale" / lang / "LC_MESSAGES" / relative.with_suffix(".po")


def load_catalog(path: pathlib.Path) -> dict[str, str]:
    """{msgid: msgstr} of the entries that are translated and not fuzzy (what Sphinx shows)."""
    if not path.exists():
        raise FileNotFoundError(f"no catalog {path}; run `make translations`")
    return {e.msgid: e.msgstr for e in polib.pofile(str(path))
            if e.translated() and not e.fuzzy and not e.obsolete}


@functools.lru_cache(maxsize=None)
def _catalog_for(page: pathlib.Path, lang: str) -> dict[str, str]:
    return load_catalog(catalog_path(page, lang))


def page_catalog(page: pathlib.Path, lang: str) -> dict[str, str]:
    """The translations of one page of the book (cached; a catalog is read once per run)."""
    return _catalog_for(page.resolve(), lang)


@functools.lru_cache(maxsize=1)
def _parser():
    return create_md_parser(MdParserConfig(enable_extensions=EXTENSIONS), RendererHTML)


def _key(text: str) -> str:
    return text.replace("\n", " ").strip()


def _math(content: str, catalog: dict[str, str]) -> str | None:
    """A display formula's translation: Sphinx keys math by its source as it is, newlines and all."""
    for key in (content, content.strip("\n"), content.strip()):
        if key.strip() and catalog.get(key):
            return content.replace(key, catalog[key], 1)
    return None


def translate_markdown(text: str, catalog: dict[str, str], proof: bool = False) -> str:
    """``text`` with every piece that ``catalog`` translates replaced by its translation.

    ``proof``: ``text`` is the body of a ``prf:proof``, whose first paragraph sphinx-proof keys
    as "Proof. ..."; the translation's label is dropped (the notebook conversion writes its own).
    """
    if not catalog:
        return text
    lines = text.split("\n")
    edits = []                                              # (first line, end line, new lines)
    tokens = _parser().parse(text)
    skip_until = -1
    for i, token in enumerate(tokens):
        if i <= skip_until or token.map is None:
            continue
        start, end = token.map
        new = None
        if token.type in ("fence", "colon_fence"):
            new = _directive(lines[start:end], token, catalog)
        elif token.type in ("math_block", "math_block_label", "amsmath"):
            translated, block = _math(token.content, catalog), "\n".join(lines[start:end])
            if translated is not None and token.content in block:
                new = block.replace(token.content, translated, 1).split("\n")
        elif token.type in ("paragraph_open", "heading_open", "dt_open"):
            content = tokens[i + 1].content
            skip_until = i + 2
            if proof and token.type == "paragraph_open":
                proof = False
                translated = catalog.get(_key("Proof. " + content))
                translated = translated and _PROOF_LABEL.sub("", translated, count=1)
            else:
                translated = catalog.get(_key(content))
            if translated and content.strip():
                new = _piece(lines[start:end], content, translated, token)
        elif token.type == "tr_open":
            j = i + 1
            while tokens[j].type != "tr_close":
                j += 1
            cells = [t.content for t in tokens[i + 1:j] if t.type == "inline"]
            row = _row(lines[start], cells, catalog)
            new, skip_until = (row and [row]), j
        if new is not None and new != lines[start:end]:
            edits.append((start, end, new))
    for start, end, new in sorted(edits, reverse=True):
        lines[start:end] = new
    return "\n".join(lines)


def _piece(lines: list[str], content: str, translated: str, token) -> list[str]:
    """A paragraph or heading as the line(s) of its translation, with the first line's prefix
    (indentation, list marker, ``>``, ``#``) and a heading's closing ``#`` kept."""
    if token.type == "heading_open" and token.markup in ("=", "-"):     # setext: keep the underline
        return _piece(lines[:-1], content, translated, _Plain) + [lines[-1]]
    first = content.split("\n")[0].strip()
    at = lines[0].find(first)
    prefix = lines[0][:at] if at >= 0 else lines[0][:len(lines[0]) - len(lines[0].lstrip())]
    out = translated.split("\n")
    if token.type == "heading_open" and at >= 0:
        out[-1] += lines[0][at + len(first):]
    continuation = re.sub(r"[^\s>]", " ", prefix)
    return [prefix + out[0]] + [continuation + line for line in out[1:]]


class _Plain:
    type, markup = "paragraph_open", ""


def _row(line: str, cells: list[str], catalog: dict[str, str]) -> str | None:
    """A table row with each translated cell replaced in place (a ``|`` in a translation escaped)."""
    out, cursor = [], 0
    for cell in cells:
        translated = catalog.get(_key(cell))
        at = line.find(cell, cursor) if cell.strip() else -1
        if not translated or at < 0:
            continue
        out.append(line[cursor:at] + re.sub(r"(?<!\\)\|", r"\\|", translated))
        cursor = at + len(cell)
    return "".join(out) + line[cursor:] if out else None


def _title(name: str, arg: str, catalog: dict[str, str]) -> str | None:
    """A directive's translated title; sphinx-proof keys its titles in parentheses."""
    if not arg or name in LABEL_ARGUMENT:
        return None
    if catalog.get(arg):
        return catalog[arg]
    if name.startswith("prf:") and catalog.get(f"({arg})"):
        return re.sub(r"^[(（](.*)[)）]$", r"\1", catalog[f"({arg})"].strip())
    return None


def _directive(lines: list[str], token, catalog: dict[str, str]) -> list[str] | None:
    """A ```` ```{name} ```` or ``:::{name}`` block: its title and its body translated."""
    match = _DIRECTIVE.fullmatch(token.info.strip())
    if match is None or match["name"] in LITERAL:
        return None
    name, arg = match["name"], match["arg"].strip()
    opening, marker = lines[0], token.markup
    closing = lines[-1].strip()
    closed = len(lines) > 1 and set(closing) == {marker[0]} and len(closing) >= len(marker)
    title = _title(name, arg, catalog)
    if title:
        at = opening.rfind(arg)
        opening = opening[:at] + title + opening[at + len(arg):]
    content = token.content.split("\n")
    if content and content[-1] == "":
        content.pop()
    head = 0
    if content and content[0].strip() == "---":                         # YAML options
        ends = [k for k in range(1, len(content)) if content[k].strip() == "---"]
        head = ends[0] + 1 if ends else 0
    else:
        while head < len(content) and re.match(r"\s*:[\w-]+:", content[head]):
            head += 1
    body = "\n".join(content[head:])
    if name == "math":
        body = _math(body, catalog) or body
    elif body:
        body = translate_markdown(body, catalog, proof=name == "prf:proof")
    indent = opening[:len(opening) - len(opening.lstrip())]
    body_lines = lines[1:1 + head] + [indent + line if line.strip() else line
                                      for line in (body.split("\n") if content[head:] else [])]
    return [opening] + body_lines + ([lines[-1]] if closed else [])


def figure_caption(metadata: dict) -> str | None:
    """The caption myst-nb gives a code cell's figure (``mystnb: figure: caption:``), as a catalog key."""
    caption = ((metadata.get("mystnb") or {}).get("figure") or {}).get("caption")
    return _key(caption) if isinstance(caption, str) and caption.strip() else None


def translate_figure_caption(metadata: dict, catalog: dict[str, str]) -> None:
    """Replace a code cell's figure caption by its translation, in place (the book shows it under
    the figure; a notebook keeps it in the cell's metadata, where myst-nb finds it)."""
    key = figure_caption(metadata)
    if key and catalog.get(key):
        metadata["mystnb"]["figure"]["caption"] = catalog[key]


def pieces(text: str) -> list[str]:
    """The keys :func:`translate_markdown` looks up in ``text`` (to compare with a catalog)."""
    seen: dict[str, None] = {}

    class Recorder(dict):
        def get(self, key, default=None):
            if key.strip():
                seen[key] = None
            return default
    translate_markdown(text, Recorder(any=""))
    return list(seen)
