"""attnlab.live_cells: which cells the browser can run, checked two ways.

On small pages whose answer is plain, and on every page of the book: every cell it says runs does
run, in page order, in a Python where torch and the other missing libraries are the browser's
stand-ins (attnlab.live); the pages' cells are run, not trusted. On ch01-04 and ex01-04 at least
half the cells run.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from attnlab.live_cells import Verdict, attnlab_needs, checkers_needing_torch, verdicts
from bookbuild.pages import code_cells

from .live_support import run_without_torch

ROOT = Path(__file__).resolve().parents[2]
SETUP = "import numpy as np\nimport torch\nimport attnlab as al\n_ = torch.manual_seed(0)\n"


def test_imports_setup_lines_and_bindings_do_not_stop_a_cell_but_what_shows_torch_does():
    assert verdicts([SETUP, "x = np.ones(3)", "t = torch.randn(3)", "print(t)", "print(x)"]) == [
        Verdict(True), Verdict(True), Verdict(True), Verdict(False, library="PyTorch"), Verdict(True)]


def test_an_import_that_needs_torch_binds_stand_ins():
    cells = [SETUP + "from attnlab.decoder import patterns\nrng = np.random.default_rng(0)\n",
             "rng.normal()", "patterns.attention_sink(3)"]
    assert verdicts(cells) == [Verdict(True), Verdict(True), Verdict(False, library="PyTorch")]


def test_a_setup_call_of_the_library_is_skipped_but_a_line_that_shows_torch_is_not():
    cells = [SETUP, "torch.manual_seed(1)\nprint(1)", "print(torch.ones(2))\nprint(1)", "torch.manual_seed(0)"]
    assert verdicts(cells) == [Verdict(True), Verdict(True), Verdict(False, library="PyTorch"),
                               Verdict(False, library="PyTorch")]


def test_a_function_using_torch_may_be_defined_but_not_called():
    cells = [SETUP, "def both(x):\n    return torch.tensor(x)\n", "both(1)"]
    assert verdicts(cells) == [Verdict(True), Verdict(True), Verdict(False, library="PyTorch")]


def test_nothing_a_skipped_cell_computes_exists_and_a_rebound_name_is_clean_again():
    cells = [SETUP, "import pandas as pd\nt = torch.ones(2)\nw = np.zeros(2)\nprint(t)", "w.sum()", "pd.DataFrame()",
             "w = np.ones(2)\nw.sum()"]
    assert verdicts(cells)[1:] == [Verdict(False, library="PyTorch"), Verdict(False, name="w"),
                                   Verdict(False, name="pd"), Verdict(True)]


def test_attnlab_modules_and_checkers_that_need_torch_are_read_from_the_package():
    assert attnlab_needs()["torch_ops"] == "PyTorch" and attnlab_needs()["widgets"] == "ipywidgets"
    assert "exact" not in attnlab_needs() and "checks" not in attnlab_needs()
    assert "check_causal_attention" in checkers_needing_torch()
    assert "check_softmax" not in checkers_needing_torch() and "check_leak_test" not in checkers_needing_torch()
    cells = [SETUP + "from attnlab.checks import check_causal_attention, check_leak_test\n",
             "check_leak_test(print)", "check_causal_attention(print)", "al.torch_ops.attention", "al.widgets.x()"]
    assert verdicts(cells)[1:] == [Verdict(True), Verdict(False, library="PyTorch"),
                                   Verdict(False, library="PyTorch"), Verdict(False, library="ipywidgets")]


def test_ipython_syntax_cannot_run():
    assert verdicts(["%timeit 1 + 1"]) == [Verdict(False, library="IPython")]


CORE = ["chapters/01_qkv.md", "chapters/02_scaling_softmax.md", "chapters/03_masks.md",
        "chapters/04_worked_examples.md", "exercises/ex01_qkv.md", "exercises/ex02_scaling.md",
        "exercises/ex03_masks.md", "exercises/ex04_worked.md"]
PAGES = sorted(p.relative_to(ROOT).as_posix() for folder in ("chapters", "exercises", "solutions")
               for p in (ROOT / folder).glob("*.md"))

@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES)
def test_every_cell_said_to_run_runs_without_torch(page):
    sources = [cell.source for cell in code_cells(ROOT / page) if cell.visible]
    runs = [(number, source) for number, (source, verdict) in enumerate(zip(sources, verdicts(sources)), 1)
            if verdict.runs]
    if page in CORE:      # the running example and the exercises' NumPy tasks
        assert len(runs) >= len(sources) // 2, "fewer than half of the page's cells run in the browser"
    outputs = run_without_torch([source for _, source in runs])
    errors = [(number, o["text"][-300:]) for (number, _), cell in zip(runs, outputs)
              for o in cell if o["kind"] == "error"]
    assert errors == []
