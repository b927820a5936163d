"""Bespoke: the "Run the code" mode of the HTML book (issue 30; the page's side is _assets/live-code.js).

For each page, the visible code cells are sorted by ``attnlab.live_cells.verdicts`` into those the
reader's browser can run (class ``live-runs``) and those it cannot (``live-static`` and
``live-needs-pytorch``, or ``live-uses-<name>`` for a cell reading a name that such a cell computed).
A page with at least one cell that runs gets the script ``live-code.js``; other pages, and readers who
never press Run, load nothing more. The PDF is untouched (HTML builders only).
"""
from __future__ import annotations

import functools
import json
import math

from docutils import nodes

from attnlab.live_cells import verdicts


def _cells(doctree: nodes.document) -> list[tuple[nodes.Element, str]]:
    """(cell, its source) for every code cell whose input the page shows, in page order."""
    found = []
    for cell in doctree.findall(nodes.container):
        if "cell" not in cell["classes"]:
            continue
        inputs = [c for c in cell.children if isinstance(c, nodes.container) and "cell_input" in c["classes"]]
        blocks = [b for i in inputs for b in i.findall(nodes.literal_block)]
        if blocks:
            found.append((cell, blocks[0].astext()))
    return found


def mark_cells(app, doctree: nodes.document, docname: str) -> None:
    if app.builder.format != "html":
        return
    cells = _cells(doctree)
    for (cell, _), verdict in zip(cells, verdicts([source for _, source in cells])):
        if verdict.runs:
            cell["classes"].append("live-runs")
        elif verdict.library:
            cell["classes"] += ["live-static", "live-needs-" + verdict.library]   # "PyTorch", "myst-nb": one token
        else:
            cell["classes"] += ["live-static", "live-uses-" + verdict.name]


@functools.cache
def download_megabytes() -> int:
    """What Run may download at most: the Pyodide core and every package served, in MB (rounded up)."""
    from bookbuild.vendor_pyodide import CORE, DEST
    lock = DEST / "pyodide-lock.json"
    if not lock.exists():
        return 0
    files = [DEST / e["file_name"] for e in json.loads(lock.read_text())["packages"].values()]
    files += [DEST / name for name in CORE] + [DEST / "cjk-subset.otf"]
    return math.ceil(sum(f.stat().st_size for f in files if f.exists()) / 1e6)


def add_script(app, pagename, templatename, context, doctree) -> None:
    if doctree is not None and any("live-runs" in n["classes"] for n in doctree.findall(nodes.container)):
        app.add_js_file("live-code.js", defer="defer")
        context["metatags"] = context.get("metatags", "") + \
            f'<meta name="live-code-megabytes" content="{download_megabytes()}">\n'


def setup(app):
    app.connect("doctree-resolved", mark_cells)
    app.connect("html-page-context", add_script)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
