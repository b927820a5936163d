"""A visible cell holds what a student would write (bookbuild.lint.cells): no translation call, no glue, no
assertion, no name only a hidden cell defined; the rules on examples, then on every chapter, exercise sheet and
solution page."""
import pytest

from bookbuild.lint import cells
from bookbuild.pages import ROOT, code_cells, pages


def test_translation_glue_and_assertions_are_found():
    source = '''
print(al.tr("its weights"), w)
display(al.tr_table(df))
glue("n", n, display=False)
assert n == 3
np.testing.assert_allclose(a, b)
print(f"worst error {err:.1e}")
'''
    assert [what for _line, what in cells.plumbing(source)] == [
        "a translation (tr)", "a translation (tr_table)", "glue (glue)", "an assert statement",
        "an assertion (assert_allclose)"]


def test_an_assertion_the_cell_catches_is_a_predicate_and_may_stay():
    source = '''
def passes(actual, expected, **tol):
    try:
        torch.testing.assert_close(actual, expected, **tol)
        return "pass"
    except AssertionError:
        return "FAIL"
'''
    assert cells.plumbing(source) == []
    assert cells.plumbing(source.replace("AssertionError", "ValueError")) == [(4, "an assertion (assert_close)")]


def test_a_hidden_cell_may_hold_them(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```{code-cell} ipython3\n:tags: [remove-cell]\nassert 1\n```\n\n"
                    "```{code-cell} ipython3\n---\ntags: [remove-input]\n---\nglue('x', 1)\n```\n\n"
                    "```{code-cell} ipython3\n:tags: [hide-input]\nassert 2\n```\n")
    assert [c.visible for c in code_cells(page)] == [False, False, True]
    assert [(f.line, f.message.split(":")[0]) for f in cells.lint(page)] == [
        (15, "a visible cell holds an assert statement")]


def test_a_name_only_a_hidden_cell_defined_is_found(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```{code-cell} ipython3\nimport numpy as np\n```\n\n"
                    "```{code-cell} ipython3\n:tags: [remove-cell]\nx = np.ones(3)\nhelper = len\n```\n\n"
                    "```{code-cell} ipython3\ny = [x[i] for i in range(3)]\nf = lambda: helper(y)\n"
                    "print(f(), len(y))\n```\n\n"
                    "```{code-cell} ipython3\nx = np.zeros(2)\n```\n\n"
                    "```{code-cell} ipython3\nprint(x, np.pi)\n```\n")
    assert cells.hidden_names(page) == [(12, ["helper", "x"])]       # the third cell's first line
    assert cells.bound_and_read("def g(a):\n    return a + b\nc = g(1)\n") == ({"g", "c"}, {"b"})


@pytest.mark.parametrize("page", pages(ROOT, ("chapters", "exercises", "solutions")), ids=lambda p: p.stem)
def test_no_visible_cell_translates_glues_or_asserts(page):
    assert [str(f) for f in cells.lint(page)] == []
