"""attnlab's message language: English by default, Chinese on request, errors unchanged."""
import gettext
import io
import os
import re
import shutil
import string
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

import attnlab as al
from attnlab import i18n


@pytest.fixture(autouse=True)
def english_afterwards():
    yield
    i18n.set_language("en")


def test_english_is_the_default_and_returns_the_message_itself():
    assert i18n.get_language() == "en"
    assert i18n._("not attempted yet") == "not attempted yet"


def test_unknown_language_is_refused_by_name():
    with pytest.raises(ValueError, match="language must be one of en, zh_CN; got 'fr'"):
        i18n.set_language("fr")


def test_aliases_select_chinese():
    i18n.set_language("zh")
    assert i18n.get_language() == "zh_CN"


def test_environment_variable_selects_the_language_at_import():
    code = "import attnlab.i18n as i; print(i.get_language())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"ATTNLAB_LANG": "zh_CN.UTF-8", "PATH": ""}, check=True)
    assert out.stdout.strip() == "zh_CN"


def test_a_bad_environment_value_warns_and_keeps_english():
    code = "import attnlab.i18n as i; print(i.get_language())"
    out = subprocess.run([sys.executable, "-W", "always", "-c", code], capture_output=True, text=True,
                         env={"ATTNLAB_LANG": "xx", "PATH": ""}, check=True)
    assert out.stdout.strip() == "en"
    assert "ATTNLAB_LANG='xx' is not one of en, zh_CN" in out.stderr


# --- the NumPy side's error messages in Chinese ------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]
PO = ROOT / "attnlab" / "locale" / "zh_CN" / "LC_MESSAGES" / "attnlab.po"
CJK = re.compile("[\u4e00-\u9fff]")


def read_catalog():
    from babel.messages import pofile

    with PO.open("rb") as handle:
        return pofile.read_po(handle, locale="zh_CN")


def entries():
    return [m for m in read_catalog() if m.id]


q23, k45, v42 = np.ones((2, 3)), np.ones((4, 5)), np.ones((4, 2))
q25 = np.ones((2, 5))
w = np.ones((4, 6))
BAD_CALLS = {  # each call, the error class it must raise, and what its message must name in any language
    "d_k mismatch": (lambda: al.attention(q23, k45, v42), al.AttentionInputError, ["q", "k", "(2, 3)", "(4, 5)"]),
    "one axis": (lambda: al.attention(np.ones(3), k45, v42), al.AttentionInputError, ["q", "(3)"]),
    "float mask": (lambda: al.attention(q25, k45, v42, allowed=np.ones((2, 4))), al.AttentionInputError,
                   ["allowed", "(2, 4)", "True", "attnlab.masks.from_additive", "attnlab.masks.from_forbidden"]),
    "mask shape": (lambda: al.attention(q25, k45, v42, allowed=np.ones((3, 4), bool)), al.AttentionInputError,
                   ["allowed", "(3, 4)", "(2, 4)"]),
    "empty row": (lambda: al.attention(q25, k45, v42, allowed=np.zeros((2, 4), bool)), al.EmptyVisibilityError,
                  ["(0,)", "allowed", "query_valid=False"]),
    "scale": (lambda: al.attention(q25, k45, v42, scale=-1.0), al.AttentionInputError, ["scale", "-1.0"]),
    "nan": (lambda: al.attention(np.array([[1.0, np.nan, 0, 0, 0]]), k45, v42), al.AttentionInputError,
            ["q", "nan", "(0, 1)", "(1, 5)"]),
    "heads": (lambda: al.multi_head_attention(w, w, w, w, w, w, n_heads=3, n_kv_heads=2), al.AttentionInputError,
              ["n_kv_heads", "n_heads=3", "n_kv_heads=2"]),
    "split": (lambda: al.multi_head_attention(w, w, np.ones((6, 6)), np.ones((6, 8)), np.ones((6, 8)), np.ones((8, 3)),
                                              n_heads=4), al.AttentionInputError, ["w_q", "6", "4"]),
    "head index": (lambda: al.kv_head_for(5, 4, 2), al.AttentionInputError, ["h", "[0, 4)", "5"]),
    "causal T": (lambda: al.masks.causal(0), al.AttentionInputError, ["T", "1", "0"]),
    "penalty": (lambda: al.masks.from_additive(np.array([0.0, -1e9])), al.AttentionInputError,
                ["-1e9", "-1000000000.0"]),
    "grad_out": (lambda: al.grad.attention_backward(q25, k45, v42, np.ones((2, 3))), al.AttentionInputError,
                 ["grad_out", "(2, 2)", "(2, 3)"]),
    "exact d_k": (lambda: al.exact.attention([[1, 2]], [[1]], [[1]]), al.AttentionInputError,
                  ["Q", "K", "(1, 2)", "(1, 1)"]),
    "exact empty row": (lambda: al.exact.attention([[1]], [[1]], [[1]], allowed=[[False]]), al.EmptyVisibilityError,
                        ["0", "allowed", "False"]),
    "show": (lambda: al.display.show("A"), al.AttentionInputError, ["show", "1"]),
}


def raised(call, error):
    with pytest.raises(error) as info:
        call()
    return info.value


@pytest.mark.parametrize("case", BAD_CALLS, ids=list(BAD_CALLS))
def test_bad_input_raises_the_same_error_in_chinese_naming_the_argument_and_shapes(case):
    call, error, named = BAD_CALLS[case]
    english = raised(call, error)
    i18n.set_language("zh_CN")
    chinese = raised(call, error)
    assert type(chinese) is type(english)
    message = str(chinese)
    assert CJK.search(message), message
    assert message != str(english)
    for part in named:
        assert part in str(english) and part in message, (part, message)
    i18n.set_language("en")
    assert str(raised(call, error)) == str(english)


def test_every_entry_is_translated_and_none_is_fuzzy():
    catalog = read_catalog()
    assert not catalog.fuzzy, "the catalog header is marked fuzzy"
    untranslated = [m.id for m in entries() if not m.string]
    fuzzy = [m.id for m in entries() if m.fuzzy]
    assert len(entries()) >= 40
    assert untranslated == [] and fuzzy == []
    assert [m.id for m in entries() if not CJK.search(m.string) and m.id not in PURE_LAYOUT] == []


# Messages with no words to translate: the layout of a checker's verdict line (its words are placeholders).
PURE_LAYOUT = {"{symbol} {task}: {status}. {message}", "{symbol} {task}: {status}.", "{problem}. ({question})"}


def placeholders(text: str) -> set[tuple]:
    return {(field, conversion, spec) for _, field, spec, conversion in string.Formatter().parse(text)
            if field is not None}


def test_every_translation_keeps_the_placeholders_of_its_message():
    for m in entries():
        assert placeholders(m.string) == placeholders(m.id), (m.id, m.string)


def test_the_catalog_holds_exactly_the_messages_marked_in_the_package():
    from babel.messages.extract import extract_from_dir

    marked = {message for _, _, message, _, _ in extract_from_dir(
        ROOT / "attnlab", method_map=[("**.py", "python")], keywords={"_": None, "N_": None})}
    in_catalog = {m.id for m in entries()}
    assert marked - in_catalog == set(), "run `make translations` and translate the new entries"
    assert in_catalog - marked == set(), "run `make translations` to drop the old entries"


def test_the_catalog_compiles_and_the_compiled_catalog_translates_every_entry():
    from babel.messages import mofile

    buffer = io.BytesIO()
    mofile.write_mo(buffer, read_catalog(), use_fuzzy=False)
    buffer.seek(0)
    compiled = gettext.GNUTranslations(buffer)
    for m in entries():
        assert compiled.gettext(m.id) == m.string


# --- which compiled catalog is read -------------------------------------------------------------

@pytest.fixture
def locale_copy(tmp_path, monkeypatch):
    """A copy of the zh_CN catalog in its own locale folder, which i18n then reads; returns (po, mo)."""
    from babel.messages import mofile

    folder = tmp_path / "zh_CN" / "LC_MESSAGES"
    folder.mkdir(parents=True)
    po, mo = folder / "attnlab.po", folder / "attnlab.mo"
    shutil.copy(PO, po)
    with mo.open("wb") as handle:
        mofile.write_mo(handle, read_catalog(), use_fuzzy=False)
    monkeypatch.setattr(i18n, "LOCALE_DIR", tmp_path)
    return po, mo


def set_mtime(path, seconds):
    os.utime(path, (seconds, seconds))


def without_babel(monkeypatch):
    monkeypatch.setitem(sys.modules, "babel.messages", None)   # `from babel.messages import ...` fails


def test_an_installed_wheel_reads_its_mo_although_pip_wrote_the_po_a_moment_later(locale_copy, monkeypatch):
    po, mo = locale_copy
    first = entries()[0]
    set_mtime(mo, 1_000_000.0)
    set_mtime(po, 1_000_000.01)       # pip writes the files in the wheel's order: .mo, then .po
    without_babel(monkeypatch)        # babel is not a runtime dependency
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        i18n.set_language("zh_CN")
    assert i18n._(first.id) == first.string


def test_an_edited_po_is_compiled_in_memory_over_an_older_mo(locale_copy):
    po, mo = locale_copy
    first = entries()[0]
    po.write_text(po.read_text(encoding="utf-8").replace(first.string, "【新译文】" + first.string), encoding="utf-8")
    set_mtime(mo, 1_000_000.0)
    set_mtime(po, 1_000_100.0)
    i18n.set_language("zh_CN")
    assert i18n._(first.id) == "【新译文】" + first.string


def test_without_babel_an_older_mo_is_used_and_a_missing_one_leaves_english(locale_copy, monkeypatch):
    po, mo = locale_copy
    first = entries()[0]
    set_mtime(mo, 1_000_000.0)
    set_mtime(po, 1_000_100.0)
    without_babel(monkeypatch)
    with pytest.warns(UserWarning, match="older than attnlab.po"):
        i18n.set_language("zh_CN")
    assert i18n._(first.id) == first.string
    mo.unlink()
    with pytest.warns(UserWarning, match="missing and babel is not installed"):
        i18n.set_language("zh_CN")
    assert i18n._(first.id) == first.id


@pytest.mark.slow
def test_the_wheel_ships_the_catalogs_compiled_by_the_build(tmp_path):
    """A checkout without .mo files (git ignores them) builds a wheel whose .mo translates every entry."""
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "attnlab", source / "attnlab", ignore=shutil.ignore_patterns("__pycache__", "*.mo"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(tmp_path / "dist")], check=True, capture_output=True)
    wheel, = (tmp_path / "dist").glob("attnlab-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        assert "attnlab/locale/zh_CN/LC_MESSAGES/attnlab.po" in names
        compiled = gettext.GNUTranslations(io.BytesIO(archive.read("attnlab/locale/zh_CN/LC_MESSAGES/attnlab.mo")))
    for m in entries():
        assert compiled.gettext(m.id) == m.string


# --- checkers and torch_ops in Chinese ----------------------------------------------------------

def _softmax_over_columns(x):
    e = np.exp(x - x.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)


def _attention_without_transpose(q, k, v, allowed=None):
    s = q @ k / np.sqrt(q.shape[-1])                     # the transpose trap: q @ k, not q @ k^T
    if allowed is not None:
        s = np.where(allowed, s, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)) @ v


def _stub(*args, **kwargs):
    raise NotImplementedError


WRONG_FUNCTIONS = {   # a checker, a wrong function written here, the mistake it must be diagnosed with
    "softmax over the wrong axis": ("check_softmax", _softmax_over_columns, "wrong_axis", "axis=-1"),
    "missing transpose": ("check_attention", _attention_without_transpose, "no_transpose",
                          "q @ np.swapaxes(k, -1, -2)"),
}


@pytest.mark.parametrize("case", WRONG_FUNCTIONS, ids=list(WRONG_FUNCTIONS))
def test_a_checker_names_the_same_mistake_in_chinese_and_is_english_again_afterwards(case):
    from attnlab import checks
    from attnlab.checks.catalogue import CATALOGUE

    name, fn, mistake, code = WRONG_FUNCTIONS[case]
    english = getattr(checks, name)(fn)
    assert english.status == "failed" and english.mistake == mistake
    explanations = [m.explanation for m in CATALOGUE[name] if m.name == mistake]
    assert any(text in english.message for text in explanations)
    i18n.set_language("zh_CN")
    chinese = getattr(checks, name)(fn)
    assert (chinese.status, chinese.mistake, chinese.task) == (english.status, english.mistake, english.task)
    assert chinese.message != english.message and CJK.search(chinese.message)
    assert "常见错误" in chinese.message and code in chinese.message        # "a classic mistake", the same fix
    assert any(i18n._(text) != text and i18n._(text) in chinese.message for text in explanations)
    assert "未通过" in str(chinese) and "未通过" in chinese._repr_html_()   # the status word, translated
    i18n.set_language("en")
    again = getattr(checks, name)(fn)
    assert (again.message, str(again)) == (english.message, str(english))


def test_a_stub_is_not_attempted_yet_in_chinese():
    from attnlab import checks

    english = checks.check_softmax(_stub)
    i18n.set_language("zh_CN")
    chinese = checks.check_softmax(_stub)
    assert chinese.status == english.status == "not attempted yet"
    assert "NotImplementedError" in chinese.message and CJK.search(chinese.message)
    assert "尚未作答" in str(chinese) and "softmax 函数" in str(chinese)
    i18n.set_language("en")
    assert str(checks.check_softmax(_stub)) == str(english)


def test_a_shape_error_of_the_student_gets_a_chinese_hint():
    from attnlab import checks

    def no_transpose_at_all(q, k):
        return q @ k.T                                 # right for 2 axes; k.T reverses all 4 axes of a batch
    i18n.set_language("zh_CN")
    result = checks.check_scores(no_transpose_at_all)
    assert result.status == "failed" and "提示" in result.message and "q @ k^T" in result.message


def test_the_catalogue_summary_is_the_first_sentence_in_the_current_language():
    from attnlab.checks.catalogue import CATALOGUE, summary

    explanation = next(m.explanation for m in CATALOGUE["check_softmax"] if m.name == "wrong_axis")
    assert summary(explanation) == "softmax over the wrong axis."
    i18n.set_language("zh_CN")
    assert summary(explanation) == "softmax 的轴不对。"


torch = pytest.importorskip("torch")
TORCH_BAD_CALLS = {   # each call, the error class, and what its message must name in any language
    "numpy input": (lambda: al.torch_ops.attention(np.ones((2, 4)), torch.ones(3, 4), torch.ones(3, 2)),
                    al.AttentionInputError, ["q", "ndarray", "torch.as_tensor(q)"]),
    "impl": (lambda: al.torch_ops.attention(torch.ones(2, 4), torch.ones(3, 4), torch.ones(3, 2), impl="fast"),
             al.AttentionInputError, ["impl", "'fast'", "'sdpa'"]),
    "dtypes": (lambda: al.torch_ops.attention(torch.ones(2, 4), torch.ones(3, 4, dtype=torch.float64),
                                               torch.ones(3, 2)), al.AttentionInputError, ["q, k, v", "dtype"]),
    "empty row": (lambda: al.torch_ops.attention(torch.ones(2, 4), torch.ones(3, 4), torch.ones(3, 2),
                                                  allowed=torch.zeros(2, 3, dtype=torch.bool)),
                  al.EmptyVisibilityError, ["(0,)", "allowed", "query_valid=False"]),
    "mha width": (lambda: al.torch_ops.MultiHeadAttention(8, 2)(torch.ones(1, 3, 6)), al.AttentionInputError,
                  ["x_q", "8", "(1, 3, 6)"]),
    "mha heads": (lambda: al.torch_ops.MultiHeadAttention(6, 4), al.AttentionInputError, ["d_model=6", "n_heads=4"]),
    "empty cache": (lambda: al.torch_ops.KVCache(2, 4).attend(torch.ones(1, 2, 1, 4)), al.KVCacheError, ["append"]),
    "mla width": (lambda: al.torch_ops.MultiHeadLatentAttention(8, 2, 4)(torch.ones(1, 3, 5)),
                  al.AttentionInputError, ["x", "8", "(1, 3, 5)"]),
}


@pytest.mark.parametrize("case", TORCH_BAD_CALLS, ids=list(TORCH_BAD_CALLS))
def test_torch_ops_bad_input_raises_the_same_error_in_chinese(case):
    call, error, named = TORCH_BAD_CALLS[case]
    english = raised(call, error)
    i18n.set_language("zh_CN")
    chinese = raised(call, error)
    assert type(chinese) is type(english)
    assert CJK.search(str(chinese)) and str(chinese) != str(english), str(chinese)
    for part in named:
        assert part in str(english) and part in str(chinese), (part, str(chinese))
    i18n.set_language("en")
    assert str(raised(call, error)) == str(english)


def test_the_torch_empty_row_message_is_the_numpy_one_in_both_languages():
    q, k, v = np.ones((2, 4)), np.ones((3, 4)), np.ones((3, 2))
    allowed = np.zeros((2, 3), bool)
    for lang in ("en", "zh_CN"):
        i18n.set_language(lang)
        numpy_error = raised(lambda: al.attention(q, k, v, allowed=allowed), al.EmptyVisibilityError)
        torch_error = raised(lambda: al.torch_ops.attention(torch.from_numpy(q), torch.from_numpy(k),
                                                            torch.from_numpy(v), allowed=allowed),
                             al.EmptyVisibilityError)
        assert str(torch_error) == str(numpy_error)


# --- the checkers of chapters 11 and 12 and check_answer in Chinese ------------------------------

def _chapter_cases():
    """(checker, a right answer, a wrong one, the mistake it must be named with); the answers are the
    ones the checkers' own tests use (tests/attnlab/checks/)."""
    from tests.attnlab.checks import test_heads as th
    from tests.attnlab.checks import test_kv_cache as tk
    from tests.attnlab.checks import test_pretrained as tp

    ring_slot = lambda p, w, s: p if p < s else s + (p - s) % w            # noqa: E731
    return {
        "check_kv_head_map": (lambda H, Hkv: [h // (H // Hkv) for h in range(H)],
                              lambda H, Hkv: [h % Hkv for h in range(H)], "modulo"),
        "check_gqa_attention": (th.gqa, None, None),
        "check_split_heads": (th.split, None, None),
        "check_merge_heads": (th.merge, None, None),
        "check_mha_from_torch": (th.mha_by_hand, lambda x, m: th.mha_by_hand(x, m, transpose=False),
                                 "untransposed_weights"),
        "check_ring_slot": (ring_slot, lambda p, w, s: p, "no_wrap"),
        "check_ring_attend": (tk.ring_attend, lambda *a: tk.ring_attend(*a, sinks=False), "no_sinks"),
        "check_absorbed_attention": (tk.absorbed, lambda *a: tk.absorbed(*a, uk_t=False), "no_transpose"),
        "check_gather_blocks": (tk.gather, lambda pool, table, n: np.concatenate([pool[b] for b in table]),
                                "whole_blocks"),
        "check_bytes_per_token": (tk.per_token, lambda c, n: tk.per_token(c, n) // c["layers"], "one_layer"),
        "check_head_weights": (tp.head_weights_numpy,
                               lambda x, p, h, v: tp.head_weights_numpy(x, p, h, v, scale=1.0), "no_scale"),
        "check_special_share": (tp.P.special_share_reference, None, None),
    }


# English words of these verdicts (task names, "Both cases match", "you dropped the sinks", ...)
ENGLISH_WORDS = ["match", "cases", "missing", "you", "your", "Correct", "Replace", "answer", "heads", "slot", "the"]


def _assert_chinese(result, english):
    text = re.sub(r"'[^']*'|`[^`]*`", "", str(result))      # quoted code and keys such as 'heads' are not words
    assert CJK.search(result.message) and CJK.search(i18n._(result.task)), text
    assert [w for w in ENGLISH_WORDS if re.search(rf"\b{w}\b", text)] == [], text   # n_heads, slot_pos are code
    assert (result.status, result.mistake) == (english.status, english.mistake)


@pytest.mark.parametrize("name", ["check_kv_head_map", "check_gqa_attention", "check_split_heads", "check_merge_heads",
                                  "check_mha_from_torch", "check_ring_slot", "check_ring_attend",
                                  "check_absorbed_attention", "check_gather_blocks", "check_bytes_per_token",
                                  "check_head_weights", "check_special_share"])
def test_a_chapter_9_or_10_checker_speaks_chinese_for_a_stub_a_right_answer_and_a_mistake(name):
    from attnlab import checks

    right, wrong, mistake = _chapter_cases()[name]
    check = getattr(checks, name)
    calls = [(_stub, "not attempted yet"), (right, "passed")] + ([(wrong, "failed")] if wrong else [])
    english = [check(fn) for fn, _status in calls]
    assert [r.status for r in english] == [status for _fn, status in calls]
    if wrong:
        assert english[-1].mistake == mistake
    i18n.set_language("zh_CN")
    chinese = [check(fn) for fn, _status in calls]
    for zh, en in zip(chinese, english):
        _assert_chinese(zh, en)
    i18n.set_language("en")
    assert [str(check(fn)) for fn, _status in calls] == [str(r) for r in english]


def test_check_answer_speaks_chinese_with_the_question_described_in_chinese():
    from attnlab import checks

    calls = [("cost.attn_bytes_2k", ...), ("scaling.var_unscaled", 64 * 16), ("cost.attn_bytes_2k", 2048 ** 2 * 4),
             ("cost.attn_bytes_2k", "8 MB"), ("no.such_question", 1)]
    english = [checks.check_answer(*call) for call in calls]
    assert [r.status for r in english] == ["not attempted yet", "passed", "failed", "failed", "failed"]
    assert english[1].message.startswith("Correct: Exercise 2.1: the variance") and "1024" in english[1].message
    i18n.set_language("zh_CN")
    chinese = [checks.check_answer(*call) for call in calls]
    for zh, en in zip(chinese, english):
        _assert_chinese(zh, en)
    assert "尚未作答" in str(chinese[0]) and "n = 2048" in chinese[0].message and "fp16" in chinese[0].message
    assert "通过" in str(chinese[1]) and "答案为 1024" in chinese[1].message
    assert "'8 MB'" in chinese[3].message
    i18n.set_language("en")
    assert [str(checks.check_answer(*call)) for call in calls] == [str(r) for r in english]


def test_every_answer_description_is_translated():
    from attnlab.checks.answer_table import ANSWERS

    i18n.set_language("zh_CN")
    assert [name for name, a in ANSWERS.items() if not CJK.search(i18n._(a.question))] == []


def test_the_mistakes_of_chapters_9_and_10_and_check_answer_are_explained_in_chinese():
    from attnlab.checks.catalogue import CATALOGUE, summary

    names = ["check_ablated_output", "check_absorbed_attention", "check_answer", "check_gather_blocks",
             "check_gqa_attention", "check_head_weights", "check_kv_head_map", "check_merge_heads",
             "check_mha_from_torch", "check_ring_attend", "check_ring_slot", "check_special_share",
             "check_split_heads", "check_bytes_per_token"]
    i18n.set_language("zh_CN")
    english = [(n, m.name) for n in names for m in CATALOGUE[n] if not CJK.search(summary(m.explanation))]
    assert english == []


def test_the_instructors_table_cell_never_shows_a_full_stop_before_a_separator():
    from attnlab.checks.catalogue import CATALOGUE, summaries_line, summary

    named = {m.name: summary(m.explanation) for m in CATALOGUE["check_ring_attend"]}
    english = summaries_line(named)
    assert english.count("; `") == len(named) - 1 and english.endswith(".")
    i18n.set_language("zh_CN")
    named = {m.name: summary(m.explanation) for m in CATALOGUE["check_ring_attend"]}
    chinese = summaries_line(named)
    assert "。；" not in chinese and ".；" not in chinese and chinese.count("；`") == len(named) - 1
    assert chinese.endswith("。") and not chinese.endswith("。。") and CJK.search(chinese)


def test_a_checker_note_puts_no_space_after_a_chinese_full_stop():
    """The note's heading ends in "." in English (a space follows) and in "。" in Chinese (none)."""
    from attnlab.checks.result import passed
    english = passed("masks.keys_visible_5_6", "Correct.")._repr_html_()
    assert re.search(r"passed\.</strong> Correct\.", english), english
    i18n.set_language("zh_CN")
    chinese = passed("masks.keys_visible_5_6", "正确。")._repr_html_()
    assert re.search(r"通过。</strong>正确。", chinese), chinese
