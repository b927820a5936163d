"""The words inside code a page shows: its comments and docstrings, translated through the page's catalog.

A learner reading the Chinese edition, a Chinese notebook or a Chinese assignment reads the code's
comments and the stubs' docstrings in Chinese; the code itself, and the package's source, stay as
they are. The messages are the comment's text after ``# `` and a docstring's text (dedented); they
live in the page's own catalog beside its prose, so one ``make translations`` extracts them and one
check finds what is left to translate.

Not messages: a comment that is only a shape (``# (B, H, T, d_k)``, ``# (T, S) -> (S, T)``), a
cell or tool marker (``# %%``, ``# noqa``, otter's ``# BEGIN SOLUTION``), and a comment without a
word of two letters or more (``# 1``).

    messages(source)                    the comment and docstring texts of one piece of Python
    translate(source, lookup)           the source with each text that ``lookup`` knows replaced
    translate_fenced(markdown, lookup)  the same for every fenced Python block of a Markdown text
    page_code(path)                     every piece of Python a page shows (cells, fences, literalincludes)
"""
from __future__ import annotations

import ast
import inspect
import io
import pathlib
import re
import textwrap
import tokenize
from collections.abc import Callable, Iterator

SHAPE = re.compile(r"^(?:\([^()]*\)|\[[^\[\]]*\])(?:\s*(?:->|→|,|=)\s*(?:\([^()]*\)|\[[^\[\]]*\]))*[\s.,]*$")
MARKER = re.compile(r"^(?:%%|noqa\b|type:|pragma\b|fmt:|ruff:|pylint:|isort:|"
                    r"(?:BEGIN|END) (?:SOLUTION|PROMPT|QUESTION|TESTS?|HIDDEN)\b|SOLUTION\b|"
                    r"IGNORE\b|HIDDEN\b|TEST\b|-\*-)")
WORD = re.compile(r"[A-Za-z]{2,}")


def is_message(text: str) -> bool:
    """Whether a comment's text is words to translate (not a shape, a marker or a number)."""
    text = text.strip()
    return bool(text) and not SHAPE.match(text) and not MARKER.match(text) and bool(WORD.search(text))


def _comments(source: str) -> Iterator[tokenize.TokenInfo]:
    try:
        yield from (t for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.COMMENT)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return


def _docstrings(source: str) -> Iterator[ast.Constant]:
    try:
        tree = ast.parse(source)
    except SyntaxError:             # IPython magics, a stub with a hole: its comments still count
        return
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                yield first.value


def _comment_text(token: tokenize.TokenInfo) -> str:
    return token.string[1:].strip()


def _docstring_text(node: ast.Constant) -> str:
    return inspect.cleandoc(node.value)          # the text without the code's indentation


def messages(source: str) -> list[str]:
    """The texts of ``source`` to translate, in order, each once."""
    found = [_comment_text(t) for t in _comments(source) if is_message(_comment_text(t))]
    found += [_docstring_text(d) for d in _docstrings(source) if WORD.search(d.value)]
    return list(dict.fromkeys(found))


def _offsets(source: str) -> list[int]:
    starts, total = [], 0
    for line in source.splitlines(keepends=True):
        starts.append(total)
        total += len(line)
    return starts + [total]


def translate(source: str, lookup: Callable[[str], str | None]) -> str:
    """``source`` with every comment and docstring that ``lookup`` translates replaced, code untouched.

    A translated docstring keeps its quotes and the indentation of its continuation lines; a
    docstring whose quotes could not hold the translation (it contains them) is left as it is.
    """
    starts = _offsets(source)
    edits: list[tuple[int, int, str]] = []
    for token in _comments(source):
        text = _comment_text(token)
        done = lookup(text) if is_message(text) else None
        if done and done != text:
            begin = starts[token.start[0] - 1] + token.start[1]
            edits.append((begin, begin + len(token.string), "# " + done.replace("\n", " ")))
    for node in _docstrings(source):
        text = _docstring_text(node)
        done = lookup(text) if WORD.search(node.value) else None
        if not done or done == text:
            continue
        begin = starts[node.lineno - 1] + node.col_offset
        end = starts[node.end_lineno - 1] + node.end_col_offset
        literal = source[begin:end]
        quote = literal[:3] if literal[:3] in ('"""', "'''") else literal[:1]
        if quote in done or "\\" in done:
            continue
        indent = " " * node.col_offset
        first, *rest = done.split("\n")
        body = "\n".join([first, *(indent + line if line.strip() else "" for line in rest)])
        closing = "\n" + indent + quote if "\n" in done and literal.rstrip(quote).endswith("\n" + indent) else quote
        edits.append((begin, end, quote + body + closing))
    for begin, end, text in sorted(edits, reverse=True):
        source = source[:begin] + text + source[end:]
    return source


_LITERALINCLUDE = re.compile(r"^[ \t]*(`{3,}|:{3,})\{literalinclude\}[ \t]*(?P<path>\S+)[ \t]*\n"
                             r"(?P<opts>(?:[ \t]*:[\w-]+:.*\n)*)", re.M)


def included_code(page: pathlib.Path, text: str) -> Iterator[str]:
    """The code each ``literalinclude`` of a page shows (the object it names, or the file)."""
    for match in _LITERALINCLUDE.finditer(text):
        path = (page.parent / match["path"]).resolve()
        if not path.exists():
            continue
        source = path.read_text()
        opts = dict(re.findall(r":([\w-]+):[ \t]*(.*)", match["opts"]))
        if opts.get("pyobject"):
            source = object_source(source, opts["pyobject"])
        yield source


def object_source(source: str, dotted: str) -> str:
    """The source of ``Class.method`` (or a function) in a module's source, dedented as
    ``literalinclude``'s ``:dedent:`` shows it; the whole source if there is no such object."""
    node: ast.AST = ast.parse(source)
    for name in dotted.split("."):
        node = next((n for n in ast.iter_child_nodes(node)
                     if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == name), None)
        if node is None:
            return source
    lines = source.splitlines(keepends=True)     # whole lines, as literalinclude shows them: a comment
    first = min([d.lineno for d in getattr(node, "decorator_list", [])] + [node.lineno])   # after the last
    return textwrap.dedent("".join(lines[first - 1:node.end_lineno]))                        # statement too


_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,})(?:python|\{code(?:-block)?\}[ \t]+python)[ \t]*\n"
                    r"(?P<opts>(?:(?P=indent):[\w-]+:.*\n)*)(?P<body>(?:.|\n)*?)^(?P=indent)(?P=fence)[ \t]*$", re.M)


def translate_fenced(markdown: str, lookup: Callable[[str], str | None]) -> str:
    """``markdown`` with the comments and docstrings of its fenced Python blocks translated."""
    return _FENCE.sub(lambda m: m[0].replace(m["body"], translate(m["body"], lookup), 1), markdown)


def page_code(page: pathlib.Path) -> list[str]:
    """Every piece of Python a page shows: its code cells' sources, its fenced Python blocks, then what
    it includes."""
    import jupytext

    text = page.read_text()
    notebook = jupytext.reads(text, fmt="md:myst")
    cells = [cell.source for cell in notebook.cells if cell.cell_type == "code"]
    return cells + [m["body"] for m in _FENCE.finditer(text)] + list(included_code(page, text))


def page_messages(page: pathlib.Path) -> list[str]:
    """The comment and docstring texts of a page's code, in order, each once."""
    return list(dict.fromkeys(m for code in page_code(page) for m in messages(code)))
