"""Generate the fingerprints of the numeric answers (``attnlab/checks/answer_table.py``) from the solutions.

Every solution page computes its numeric answers and passes them to ``check_answer("name", value)``.
This tool executes the code cells of ``solutions/sol*.md`` in order (one namespace per page, the way
a kernel runs them), with ``check_answer`` replaced by a recorder, so the right values are exactly
those the solutions compute. What a value *means* and the known wrong values with the hint a
student reads come from ``QUESTIONS`` below (each wrong value is written as the computation that
produces it). Two hints of one question may not give the same value: the tool refuses, so that one
number never gets two different explanations (merge them into one hint instead).

    python tools/make_answers.py            write attnlab/checks/answer_table.py
    python tools/make_answers.py --check    exit 1 if the file differs from what the solutions give
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import pathlib
import sys
from dataclasses import dataclass, field

ROOT = pathlib.Path(__file__).resolve().parent.parent
TABLE = ROOT / "attnlab" / "checks" / "answer_table.py"


@dataclass(frozen=True)
class Question:
    question: str            # what the number is, in words (shown to the student)
    exponent: int = 0        # compared in units of 10**exponent
    exact: bool = True       # integers, no tolerance
    hints: tuple = field(default=())   # ((wrong value, what it means), ...)


d = 512
QUESTIONS = {
    "qkv.shapes": Question(
        "the shapes [rows, columns] of Q K^T, A and A V for Q (5 x 8), K (7 x 8), V (7 x 3)", hints=(
            ([[7, 5], [7, 5], [7, 3]], "Rows belong to queries and columns to keys: the scores Q K^T are T x S."),
            ([[5, 7], [5, 7], [5, 8]], "The output has one column per value feature, d_v, not d_k."))),
    "qkv.transpose_trap": Question(
        "the matrix Q K^T for Q = [[1, 2], [0, 1]], K = [[1, 0], [2, 1]]", hints=(
            ([[5, 2], [2, 1]], "That is Q K, without the transpose: same shape, different values (the transpose "
                               "trap)."),
            ([[1, 0], [4, 1]], "That is K Q^T, the transpose: row i must belong to query i."))),
    "scaling.var_unscaled": Question(
        "the variance of an unscaled score q . k for d_k = 64 and coordinate variances 4", hints=(
            (64 * 1, "Each product q_r k_r has variance 4 x 4 = 16, not 1."),
            (64 * 16 // 64, "That is the variance after dividing by sqrt(d_k)."),
            (64 * 4, "Both factors have variance 4: each product has variance 4 x 4 = 16."))),
    "scaling.var_scaled": Question(
        "the variance of the scaled score q . k / sqrt(d_k) under the same assumptions", hints=(
            (1, "Scaling removes the factor d_k, not the scale of the inputs: 4 x 4 = 16 remains."),
            (64 * 16 // 8, "Dividing by sqrt(d_k) divides the variance by d_k, not by sqrt(d_k)."))),
    "scaling.std_unscaled_64": Question(
        "the standard deviation of an unscaled score for d_k = 64 with unit-variance coordinates", hints=(
            (64, "64 is the variance; the standard deviation is its square root."),)),
    "scaling.dropout_rowsum_var": Question(
        "the variance of the row sum after dropout with keep probability 0.9 on the row (0.5, 0.3, 0.2)",
        exponent=-5, exact=False, hints=(
            (0.38 * 0.1, "Each kept entry is divided by q, so the variance of each term is A^2 (1 - q) / q."),
            (0.38 * 0.9 * 0.1, "The term m A / q has variance (A / q)^2 q (1 - q) = A^2 (1 - q) / q."))),
    "masks.keys_visible_5_6": Question(
        "how many keys the single query at absolute position 8 may read (keys at positions 0..8)", hints=(
            (1, "That is the top-left triangle: it treats the query as position 0. Positions are absolute."),)),
    "masks.keys_lost_top_left": Question("how many of those keys a top-left-aligned 1 x 9 triangle wrongly forbids"),
    "worked.padding_example": Question(
        "the weights for logits [3.0, 0.5, -1.0, 2.0] when the last two keys are padding", exponent=-4, exact=False,
        hints=(
            ([0.6811, 0.0559, 0.0125, 0.2506], "Those are the weights without the mask."),
            ([0.6811, 0.0559, 0.0, 0.0], "That is the mask applied after the softmax: the row no longer sums to 1."))),
    "worked.weights_5_3": Question(
        "the weights of the first query of the three-token example without the mask", exponent=-4, exact=False,
        hints=(
            ([0.4223, 0.1554, 0.4223], "Those weights are unscaled: divide the scores by sqrt(2) first."),
            ([1.0, 0.0, 0.0], "Those are the causal weights; this exercise removes the mask."))),
    "worked.output_5_3": Question(
        "the first output row of the three-token example without the mask", exponent=-3, exact=False, hints=(
            ([0.802, 0.599], "That row mixes the inputs X, not the values V."),)),
    "worked.output_5_3_v3_zero": Question(
        "the same output row after replacing the third value vector by zero", exponent=-4, exact=False, hints=(
            ([0.6698, 0.6605], "Zeroing a value does not remove its key: the weights stay (r, s, r)."),)),
    "worked.four_token_output0": Question(
        "the output of token 0 in the four-token example", exponent=-4, exact=False, hints=(
            ([0.7377, 0.4372], "Unscaled: divide the scores by sqrt(d_k) = sqrt(2) first."),
            ([0.7, 0.5], "Those are the source's rounded numbers; compute the value to four significant digits."))),
    "worked.cross_attention": Question(
        "the output O (3 x 2) of the cross-attention example with scores (0, 0), (log 3, 0), (0, log 3)",
        exponent=-3, exact=False),
    "backprop.dk1_5_5": Question(
        "the gradient of L, the first coordinate of the second output, with respect to the first key",
        exponent=-4, exact=False, hints=(
            ([0.0, 0.2212], "The 1/sqrt(d_k) of the scores is missing: dK = dU^T Q / sqrt(d_k)."),
            ([0.1564, 0.0], "dK₁ = dU₂₁ q₂ / sqrt(2) and q₂ = (0, 1): only the second coordinate is "
                            "nonzero."))),
    "backprop.probe_J": Question("the probe loss L in the two-position example", exponent=-3, exact=False),
    "backprop.dS": Question(
        "the score gradient dU (2 x 2) in the two-position example", exponent=-3, exact=False, hints=(
            ([[1.5, 0.0], [0.0, 6.0]], "That is A * dA without the row-mean term: each row of dU must sum to 0."),)),
    "multihead.params_h8": Question(
        "the number of weights in W_Q, W_K, W_V, W_O for d = 512, H = 8 (no biases)", hints=(
            (3 * d * d, "Count W_O too: four d x d matrices."),)),
    "multihead.params_h64": Question(
        "the same count for d = 512, H = 64", hints=(
            (64 * 4 * d * d, "Heads split the d features; they do not copy the matrices."),
            (3 * d * d, "Count W_O too: four d x d matrices."))),
    "multihead.kv_ratio_5_11": Question(
        "the KV-cache size with 8 KV heads divided by the size with 32", exponent=-4, exact=False, hints=(
            (32 / 8, "The ratio new / old is 8 / 32."),)),
    "multihead.scores_ratio_5_11": Question(
        "the number of attention scores with 8 KV heads divided by the number with 32", exponent=-3, exact=False,
        hints=((8 / 32, "Every one of the 32 query heads still computes its own T x S scores."),)),
    "multihead.gpt2_head_dim": Question("the head width d_k of GPT-2 small (d = 768, H = 12)"),
    "position.smollm2_cache_bytes": Question(
        "the bytes one token adds to the KV cache of SmolLM2-135M (30 layers, 3 key/value heads of width 64), "
        "all layers, in bfloat16", hints=(
            (11520, "Keys and values: the factor 2 is missing."),
            (69120, "The cache holds the 3 key/value heads, not the 9 query heads."),
            (768, "Every layer caches its own keys and values: multiply by the 30 layers."),
            (46080, "That is float32; bfloat16 has 2 bytes per number."),
            (184320, "That counts bits; the question asks for bytes."))),
    "cost.kv_bytes_5_7": Question(
        "the bytes of the KV cache of one layer with 6 KV heads of width 64, 2048 positions, 2 bytes each", hints=(
            (2 * 24 * 64 * 2048 * 2, "That is the MHA cache: GQA stores H_kv = 6 heads, not 24."),
            (6 * 64 * 2048 * 2, "Keys and values: the factor 2 is missing."))),
    "cost.kv_ratio_5_7": Question(
        "the GQA cache divided by the MHA cache (6 vs 24 KV heads)", exponent=-4, exact=False, hints=(
            (24 / 6, "The ratio GQA / MHA is 6 / 24."),)),
    "cost.attn_bytes_2k": Question(
        "the bytes of one fp16 attention matrix for n = 2048 (one head, one sequence)", hints=(
            (2048**2 * 4, "fp16 is 2 bytes per entry, not 4."),
            (2048**2 * 1, "Each fp16 entry takes 2 bytes."))),
    "cost.attn_bytes_8k": Question(
        "the same for n = 8192", hints=(
            (8192**2 * 4, "fp16 is 2 bytes per entry, not 4."),
            (8192**2 * 1, "Each fp16 entry takes 2 bytes."))),
    "cost.weights_bytes_5_35": Question(
        "the bytes of the weights B x H x T x S in fp16 for B = 2, H = 16, T = S = 4096", hints=(
            (1 * 16 * 4096**2 * 2, "Both sequences of the batch: B = 2."),)),
    "cost.flops_interaction": Question(
        "the FLOPs of Q K^T and A V together for B = 1, H = 12, T = S = 1024, d_k = d_v = 64", hints=(
            (2 * 12 * 1024 * 1024 * 64,
             "That is half the count, which two different slips give: counting a multiply-add as 1 FLOP instead of "
             "2, or counting only one of the two products Q K^T and A V. Each product costs 2 B H T S d FLOPs."),
            (1 * 12 * 1024 * 1024 * 64, "A quarter of the count: a multiply-add is 2 FLOPs, and both products "
                                        "Q K^T and A V count."))),
    "structure.outputs_5_8": Question(
        "the outputs of the two heads with scalar keys (0, 1), values (0, 1) and queries 0 and 1", exponent=-4,
        exact=False, hints=(([0.5, 0.5], "With query 1 the scores are (0, 1), so the weights are not uniform."),)),
    # The value comes from the real model; the usual slips are named by check_special_share before this.
    "pretrained.max_special_share": Question(
        "the largest share of a head's weight on [CLS] and [SEP] (mean over real queries) among the 72 heads of "
        "all-MiniLM-L6-v2 on the four sentences of the chapter 11 exercises", exponent=-4, exact=False),
}


def solution_values() -> dict:
    """Execute every solution page's code cells with a recording ``check_answer``; name -> value."""
    import jupytext
    import matplotlib

    matplotlib.use("Agg")
    import attnlab.checks as checks
    from attnlab.checks import result as R

    recorded = {}

    def record(name, value=..., **_):
        recorded[name] = value
        return R.passed(f"answer {name}", "recorded by tools/make_answers.py")

    real = checks.check_answer
    checks.check_answer = record
    cwd = os.getcwd()
    try:
        for page in sorted((ROOT / "solutions").glob("sol[0-9][0-9]_*.md")):
            os.chdir(page.parent)
            notebook = jupytext.read(page, fmt="md:myst")
            namespace = {"__name__": "__main__"}
            for cell in notebook.cells:
                if cell.cell_type != "code":
                    continue
                source = "\n".join(line for line in cell.source.splitlines()
                                    if not line.lstrip().startswith(("%", "!")))
                with contextlib.redirect_stdout(io.StringIO()):
                    exec(compile(source, f"{page.name}", "exec"), namespace)
    finally:
        checks.check_answer = real
        os.chdir(cwd)
    return recorded


def _plain(value):
    import numpy as np
    arr = np.asarray(value, dtype=float)
    return arr


def _text(text: str, indent: int) -> str:
    """A string literal, split into adjacent literals of at most 90 characters."""
    import textwrap
    parts = textwrap.wrap(text, 90, drop_whitespace=False, break_on_hyphens=False) or [""]
    if len(parts) == 1:
        return repr(text)
    return "(" + ("\n" + " " * (indent + 1)).join(repr(p) for p in parts) + ")"


def _marked(text: str, indent: int) -> str:
    """``text`` as an N_() call, so that bookbuild.i18n.catalogs extracts it for the translators."""
    literal = _text(text, indent + 2)
    return f"N_{literal}" if literal.startswith("(") else f"N_({literal})"


def _digests(digests: tuple, indent: int) -> str:
    if len(repr(digests)) + indent < 110:
        return repr(digests)
    inner = ("\n" + " " * (indent + 1)).join(f"{d!r}," for d in digests)
    return f"({inner})"


def render(values: dict) -> str:
    from attnlab.checks.answers import fingerprint

    missing = sorted(set(QUESTIONS) - set(values))
    unknown = sorted(set(values) - set(QUESTIONS))
    if missing or unknown:
        raise SystemExit(f"questions without a solution value: {missing}; values without a question: {unknown}")
    lines = ['"""Fingerprints of the numeric answers.', "",
             "GENERATED by tools/make_answers.py from the values the solution pages compute: do not edit.", '"""',
             "from ..i18n import N_", "from .answers import Answer", "", "ANSWERS = {"]
    for name, q in QUESTIONS.items():
        arr = _plain(values[name])
        digests = fingerprint(name, arr, q.exponent)
        hints, seen = [], {digests: "the right answer"}
        for wrong, meaning in q.hints:
            wrong_digests = fingerprint(name, _plain(wrong).reshape(arr.shape), q.exponent)
            if wrong_digests in seen:
                raise SystemExit(f"{name}: the hint {meaning!r} has the same value as {seen[wrong_digests]!r}; "
                                 f"merge them into one hint")
            seen[wrong_digests] = meaning
            hints.append((wrong_digests, meaning))
        lines += [f"    {name!r}: Answer(", f"        {_marked(q.question, 8)},",
                  f"        {tuple(arr.shape)!r}, {q.exponent}, {q.exact},", f"        {_digests(digests, 8)},",
                  "        ("]
        lines += [f"            ({_digests(w, 13)},\n             {_marked(m, 13)})," for w, m in hints]
        lines += ["        ),", "    ),"]
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed table instead of writing")
    args = parser.parse_args(argv)
    text = render(solution_values())
    if args.check:
        if TABLE.exists() and TABLE.read_text() == text:
            print(f"{TABLE.relative_to(ROOT)} matches the solutions")
            return 0
        print(f"{TABLE.relative_to(ROOT)} differs from what the solutions give: run tools/make_answers.py")
        return 1
    TABLE.write_text(text)
    print(f"wrote {TABLE.relative_to(ROOT)} ({len(QUESTIONS)} questions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
