"""attnlab._shown: a text a page shows, found in a catalog as a message, a padded message, a template's
output, or line by line; anything else left as it is."""
import textwrap

import pytest

from attnlab._shown import Index, Template, display_width, pad

CATALOG = {
    "its weights": "其权重",
    "mean s^2": "s^2 的均值",
    "no mask": "无掩码",
    "passes": "通过",
    "worst error {err:.1e}": "最大误差 {err:.1e}",
    "{name:<15} max |hand - SDPA| = {e.abs().max():.1e}": "{name:<15} max |手写 - SDPA| = {e.abs().max():.1e}",
    "{label:<24}{verdict:>8}": "{label:<24}{verdict:>8}",
    "W_Q W_K^T is {M.shape[0]}x{M.shape[1]} with rank {rank}":
        "W_Q W_K^T 是 {M.shape[0]}x{M.shape[1]} 矩阵，秩为 {rank}",
    "a first line {x}\nand a second": "第一行 {x}\n第二行",
    "lemma: $\\sqrt{d_k}$": "引理：$\\sqrt{d_k}$",
    "{x}": "{x}",
}


@pytest.fixture
def index():
    return Index(CATALOG)


def test_a_message_and_a_message_padded_as_a_format_spec_pads_it(index):
    assert index.translate("its weights") == "其权重"
    assert index.translate(f"{'mean s^2':>12}") == "  s^2 的均值"           # right-aligned, 12 columns
    assert display_width(index.translate(f"{'no mask':<10}")) == 10
    assert index.translate(f"{'no mask':<10}").startswith("无掩码")


def test_the_output_of_an_f_string_is_found_by_its_template(index):
    err = 3.14159e-16
    assert index.translate(f"worst error {err:.1e}") == "最大误差 3.1e-16"
    M, rank = [[0] * 8] * 8, 2
    shown = f"W_Q W_K^T is {len(M)}x{len(M[0])} with rank {rank}"
    assert index.translate(shown) == "W_Q W_K^T 是 8x8 矩阵，秩为 2"


def test_a_captured_label_is_translated_and_padded_to_its_field(index):
    line = f"{'no mask':<15} max |hand - SDPA| = {2.5e-17:.1e}"
    assert index.translate(line) == f"{'无掩码'}{' ' * 9} max |手写 - SDPA| = 2.5e-17"
    assert display_width(index.translate(line).split(" max")[0]) == 15


def test_a_layout_template_translates_its_fields_only_and_leaves_other_lines_alone(index):
    assert index.translate(f"{'no mask':<24}{'passes':>8}") == pad("无掩码", 24, "<") + pad("通过", 8, ">")
    unrelated = f"{'a line of numbers':<24}{'3.1415':>8}"
    assert index.translate(unrelated) == unrelated


def test_math_in_a_message_is_found_whole_and_a_bare_field_matches_nothing(index):
    assert index.translate("lemma: $\\sqrt{d_k}$") == "引理：$\\sqrt{d_k}$"
    assert Template.of("{x}", "{x}") is None
    assert index.translate("anything at all") == "anything at all"


def test_text_wrapped_by_textwrap_still_matches_and_lines_are_tried_one_by_one(index):
    wrapped = textwrap.fill(f"worst error {1e-3:.1e}", 8)
    assert "\n" in wrapped and index.translate(wrapped) == "最大误差 1.0e-03"
    assert index.translate("its weights\n[0.5 0.5]\nno mask") == "其权重\n[0.5 0.5]\n无掩码"
    assert index.translate("a first line 7\nand a second") == "第一行 7\n第二行"


def test_a_markdown_table_row_is_translated_cell_by_cell(index):
    assert index.translate("| no mask | 3.5 | passes |") == "| 无掩码 | 3.5 | 通过 |"
    assert index.translate("|---|---:|") == "|---|---:|"


def test_a_wide_character_counts_two_columns():
    assert display_width("无掩码 ab") == 9
    assert pad("无", 4, ">") == "  无" and pad("无", 4, "^") == " 无 " and pad("无", 1, "<") == "无"
