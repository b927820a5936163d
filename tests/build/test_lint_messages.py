"""attnlab marks every message a reader may see for translation (bookbuild.lint.messages): the three scans on
examples, then on the package."""
import pytest

from bookbuild.lint.messages import (
    CHECKERS,
    PACKAGE,
    TRANSLATED,
    UI_MODULES,
    lint,
    rebinds_translation,
    unmarked_ui_texts,
    unwrapped_checker_messages,
    unwrapped_messages,
)


def test_the_scan_finds_unwrapped_messages_and_accepts_wrapped_ones():
    assert unwrapped_messages('raise ValueError(f"q has {n} axes")')
    assert unwrapped_messages('raise ValueError("q is empty")')
    assert unwrapped_messages('raise ValueError(_(f"q has {n} axes"))')
    assert unwrapped_messages('warnings.warn("slow")')
    assert unwrapped_messages('raise ValueError(_("q has {n} axes; {what}").format(n=1, what="x"))')
    assert not unwrapped_messages('raise ValueError(_("q has {n} axes").format(n=len(s)))')
    assert not unwrapped_messages('raise ValueError(_("{w}").format(w=_(N_("leading axes"))))')


def test_the_checker_scan_finds_unmarked_verdicts_and_explanations():
    assert unwrapped_checker_messages('run.fail(f"On {case}, wrong")')
    assert unwrapped_checker_messages('run.passed("All good")')
    assert unwrapped_checker_messages('@model("x", "an explanation")\ndef f(): pass')
    assert unwrapped_checker_messages('M = Mistake("x", "an explanation")')
    assert not unwrapped_checker_messages('run.fail(_("On {case}, wrong").format(case=_(case)), "x")')
    assert not unwrapped_checker_messages('M = Mistake("x", N_("an explanation"))')
    assert not unwrapped_checker_messages('run.fail(M.text[0].upper() + M.text[1:], M.name)')


def test_the_ui_scan_finds_unmarked_labels_and_accepts_marked_ones():
    assert unmarked_ui_texts('W.IntSlider(description="layers")')
    assert unmarked_ui_texts('svg.text(1, 2, f"sentence {b}", size=9)')
    assert unmarked_ui_texts('W.ToggleButtons(options=["no mask", "mask v1"])')
    assert unmarked_ui_texts('ax.plot(x, y, label="output")')
    assert not unmarked_ui_texts('W.IntSlider(description=_("layers"))')
    assert not unmarked_ui_texts('svg.text(1, 2, _("sentence {b}").format(b=b), size=9)')
    assert not unmarked_ui_texts('W.Dropdown(description="d_k", options=[(_(LABELS[p]), p) for p in P])')
    assert not unmarked_ui_texts('svg.text(1, 2, f"{w:.2f}", size=9)')
    assert not unmarked_ui_texts('W.ToggleButtons(options=[(_("right"), "right"), (_("left"), "left")])')
    assert unmarked_ui_texts('W.ToggleButtons(options=[("right", "right")])')


def test_a_function_that_binds_the_translation_function_is_found():
    assert rebinds_translation("def f(x):\n    batch, _ = x.shape\n    return _('no')") == [2]
    assert rebinds_translation("def f(x):\n    return _('yes')") == []


@pytest.fixture(scope="module")
def findings():
    return lint()


@pytest.mark.parametrize("module", sorted(set(TRANSLATED) | set(UI_MODULES)))
def test_every_message_of_a_translated_module_is_marked(module, findings):
    assert [str(f) for f in findings if f.path == PACKAGE / module] == []


def test_the_rules_cover_the_checkers_and_the_explorers():
    assert len(CHECKERS) >= 15 and "plots.py" in UI_MODULES and any(m.startswith("widgets/") for m in UI_MODULES)
