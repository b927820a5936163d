"""attnlab.live: a page's cells run as Jupyter runs them, outputs as Jupyter shows them.

The browser runs this module under Pyodide (tests/build/test_live_code_browser.py); here it runs under
CPython, against references that do not go through it: Python's own repr, sympy.latex, pandas'
to_html, PIL reading the PNG back, and, in a subprocess, the stand-ins where torch is "missing".
"""
from __future__ import annotations

import base64
import io

import numpy as np
import pandas as pd
import pytest
import sympy as sp
from PIL import Image

import attnlab
from attnlab import live

from .live_support import run_without_torch


@pytest.fixture
def page():
    return live.Page()


def test_printing_and_the_last_expression_show_as_in_jupyter(page):
    outputs = page.run_cell("import numpy as np\nx = np.arange(3)\nprint('sum', x.sum())\nx * 2")
    assert outputs[0] == {"kind": "stream", "text": "sum 3\n"}
    assert outputs[1]["kind"] == "display"
    assert outputs[1]["data"]["text/plain"] == repr(np.arange(3) * 2)


def test_a_trailing_semicolon_hides_the_value_and_cells_share_one_namespace(page):
    assert page.run_cell("y = 41\ny + 1;") == []
    assert page.run_cell("y + 1")[0]["data"]["text/plain"] == "42"


def test_an_error_shows_the_cell_line_and_not_the_runtime(page):
    outputs = page.run_cell("a = 1\nb = a / 0\n")
    assert [o["kind"] for o in outputs] == ["error"]
    text = outputs[0]["text"]
    assert "ZeroDivisionError" in text and "b = a / 0" in text and "line 2" in text
    assert "live.py" not in text


def test_a_syntax_error_is_an_output_too(page):
    outputs = page.run_cell("def f(:\n")
    assert outputs[0]["kind"] == "error" and "SyntaxError" in outputs[0]["text"]


def test_sympy_and_pandas_values_keep_their_rich_forms(page):
    page.namespace["sp"] = sp
    latex = page.run_cell("sp.Rational(1, 3) + sp.Symbol('E')")[0]["data"]["text/latex"]
    assert sp.latex(sp.Rational(1, 3) + sp.Symbol("E")) in latex
    frame = pd.DataFrame({"w": [0.25, 0.75]})
    page.namespace["frame"] = frame
    assert page.run_cell("frame")[0]["data"]["text/html"] == frame._repr_html_()


def test_a_figure_left_open_comes_back_as_a_png_and_is_closed(page):
    import matplotlib.pyplot as plt
    outputs = page.run_cell("import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.plot([0, 1], [1, 0])")
    pngs = [o["data"]["image/png"] for o in outputs if "image/png" in o.get("data", {})]
    assert len(pngs) == 1
    width, height = Image.open(io.BytesIO(base64.b64decode(pngs[0]))).size
    assert width > 100 and height > 100
    assert plt.get_fignums() == []


def test_display_shows_each_value_in_order(page):
    outputs = page.run_cell("display(1, 'two')\nprint('three')")
    assert [o.get("data", {}).get("text/plain", o.get("text")) for o in outputs] == ["1", "'two'", "three\n"]


def test_print_speaks_the_edition_language(page):
    attnlab.set_language("zh_CN")
    try:
        text = page.run_cell("print('its weights')")[0]["text"]
        chinese = attnlab.page_text("its weights")
    finally:
        attnlab.set_language("en")
    assert chinese != "its weights"
    assert text == chinese + "\n"


def test_without_torch_imports_succeed_lines_that_show_nothing_are_skipped_and_uses_say_why():
    results = run_without_torch([
        "import numpy as np\nimport torch\nimport torch.nn.functional as F\n"
        "_ = torch.manual_seed(0)\nx = np.ones(2)\nx.sum()",
        "isinstance(x, torch.Tensor)",
        "t = torch.randn(3)",
        "F.softmax(t, dim=0)",
    ])
    setup, isinstance_check, use, function = results
    assert [o["kind"] for o in setup] == ["note", "display"]
    assert "Line 4" in setup[0]["text"] and "PyTorch does not run in the browser" in setup[0]["text"]
    assert setup[1]["data"]["text/plain"] == repr(np.ones(2).sum())
    assert isinstance_check[0]["data"]["text/plain"] == "False"
    assert use[0]["kind"] == "note" and "Line 1 was skipped" in use[0]["text"]    # t: a stand-in
    assert function[0]["kind"] == "error" and "PyTorch does not run in the browser" in function[0]["text"]


def test_the_browser_ipython_display_shows_on_the_page(monkeypatch):
    module = live.ipython_display()
    page = live.Page()
    page.namespace["M"] = module
    outputs = page.run_cell("M.display(M.Math('a^2'))\nM.HTML('<b>x</b>')")
    assert outputs[0]["data"]["text/latex"] == "$\\displaystyle a^2$"
    assert outputs[1]["data"]["text/html"] == "<b>x</b>"
