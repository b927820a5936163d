"""Numeric answers: ``check_answer(name, value)`` for the exercises whose answer is a number.

The package stores a fingerprint of each answer, not the answer: every entry is rounded to a
fixed quantum (exact for integers, about four significant digits for reals) and hashed with the
question's name and the entry's index. A value is accepted when its rounded entries hash to the
stored fingerprints (one quantum either way is tolerated for reals). This keeps the answers out
of plain sight; it is not meant to resist someone who sets out to break it.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from . import result as R


@dataclass(frozen=True)
class Answer:
    question: str                      # what the number is, in words
    shape: tuple                       # () for a scalar, (n,) or (r, c)
    exponent: int                      # entries are compared in units of 10**exponent
    exact: bool                        # True: integers, no tolerance
    digests: tuple                     # one fingerprint per entry (row-major)
    hints: tuple = field(default=())   # ((digests of a known wrong answer, what it means), ...)


def _digest(name: str, index: int, units: int) -> str:
    return hashlib.sha256(f"attnlab/{name}/{index}/{units}".encode()).hexdigest()[:16]


def _units(value: float, exponent: int) -> int:
    return int(np.round(value / 10.0 ** exponent))


def fingerprint(name: str, value, exponent: int = 0) -> tuple:
    """Digests for ``value`` (for authors adding a question; run it outside the package)."""
    flat = np.asarray(value, dtype=float).reshape(-1)
    return tuple(_digest(name, i, _units(x, exponent)) for i, x in enumerate(flat))


def _entry_ok(name, index, x, exponent, exact, digest) -> bool:
    units = _units(x, exponent)
    if exact and abs(x - units * 10.0 ** exponent) > 1e-9 * max(1.0, abs(x)):
        return False
    spread = (0,) if exact else (0, -1, 1)
    return any(_digest(name, index, units + d) == digest for d in spread)


def _as_entries(task, value, answer: Answer):
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"could not read {value!r} as a number or an array of numbers") from None
    if arr.shape != tuple(answer.shape):
        want = "a single number" if answer.shape == () else f"an array of shape {tuple(answer.shape)}"
        raise ValueError(f"the answer is {want}; you gave shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("the answer contains nan or inf")
    return arr.reshape(-1)


def check_answer(name: str, value) -> R.CheckResult:
    """Check a numeric answer to the question called ``name``.

    ``value`` may be a number, a fraction, a SymPy number or a (nested) list/array of them; ``...``
    (the placeholder in the exercise notebooks) means "not attempted yet".
    """
    task = f"answer {name}"
    answer = ANSWERS.get(name)
    if answer is None:
        close = [n for n in ANSWERS if n.split(".")[0] == name.split(".")[0]]
        return R.failed(task, f"There is no question called {name!r}." +
                        (f" Questions of this chapter: {', '.join(close)}." if close else ""))
    if value is ... or value is None:
        return R.CheckResult(task, R.NOT_ATTEMPTED, f"Replace `...` with your answer: {answer.question}.")
    try:
        flat = _as_entries(task, value, answer)
    except ValueError as err:
        return R.failed(task, f"{str(err)[0].upper()}{str(err)[1:]}. ({answer.question})")
    ok = [_entry_ok(name, i, x, answer.exponent, answer.exact, d) for i, (x, d) in enumerate(zip(flat, answer.digests))]
    if all(ok):
        return R.passed(task, f"Correct: {answer.question} = {_show(flat, answer)}.")
    for wrong, meaning in answer.hints:
        if all(_entry_ok(name, i, x, answer.exponent, answer.exact, d) for i, (x, d) in enumerate(zip(flat, wrong))):
            return R.failed(task, f"Not yet ({answer.question}). {meaning}", "known_wrong_answer")
    precision = ("exactly" if answer.exact else
                 f"to within {10.0 ** answer.exponent:g} (compute it in Python rather than typing a rounded value)")
    if answer.shape == ():
        return R.failed(task, f"Not yet ({answer.question}). The answer must match {precision}.")
    index = [tuple(int(i) for i in np.unravel_index(j, answer.shape)) for j, good in enumerate(ok) if not good]
    shown = ", ".join(str(i if len(i) > 1 else i[0]) for i in index)
    which = f"Entry {shown} does" if len(index) == 1 else f"Entries {shown} do"
    return R.failed(task, f"Not yet ({answer.question}). {which} not match; the answer must match {precision}.")


def _show(flat, answer: Answer) -> str:
    values = [int(round(x)) if answer.exact else float(f"{x:.6g}") for x in flat]
    if answer.shape == ():
        return str(values[0])
    return str(np.array(values, dtype=object).reshape(answer.shape).tolist())


ANSWERS: dict[str, Answer] = {}

# Generated with answers.fingerprint from values computed in the solution pages (tests/test_checks.py
# recomputes every answer independently and checks it is accepted).
ANSWERS["qkv.shapes"] = Answer(
    "the shapes [rows, columns] of Q K^T, A and A V for Q (5 x 8), K (7 x 8), V (7 x 3)",
    (3, 2),
    0,
    True,
    (
        "cf466ddd31a6fb24",
        "5e43ec978223dcbe",
        "301fd83e09289d2b",
        "159bce2bf4683f77",
        "c1e1be667ce6c910",
        "8c83d949f1f1e8fc",
    ),
    (
        (
            (
                "09fbf522dcfbcbc5",
                "a004be0678fcda4c",
                "a4850ab7cf5289f8",
                "4d63558b96fd0d15",
                "09399bfbe269c02d",
                "8c83d949f1f1e8fc",
            ),
            "Rows belong to queries and columns to keys: the scores Q K^T are T x S.",
        ),
        (
            (
                "cf466ddd31a6fb24",
                "5e43ec978223dcbe",
                "301fd83e09289d2b",
                "159bce2bf4683f77",
                "c1e1be667ce6c910",
                "5e8531604002bf24",
            ),
            "The output has one column per value feature, d_v, not d_k.",
        ),
    ),
)
ANSWERS['qkv.transpose_trap'] = Answer(
    'the matrix Q K^T for Q = [[1, 2], [0, 1]], K = [[1, 0], [2, 1]]',
    (2, 2), 0, True, ('be85f5a6e19c124e', 'c7c856ae59f5a282', '323b117ffb588f48', 'eac0ad39833083bb'),
    (
        (('23ef73259346907a', '707399a9267df4b2', '3fa726b4794e2cc6', 'eac0ad39833083bb'),
         'That is Q K, without the transpose: same shape, different values (the transpose trap).'),
        (('be85f5a6e19c124e', 'e593c6c3713d8f44', 'dc177bce228aacb1', 'eac0ad39833083bb'),
         'That is K Q^T, the transpose: row i must belong to query i.'),
    ))
ANSWERS['scaling.var_unscaled'] = Answer(
    'the variance of an unscaled score q . k for d_k = 64 and coordinate variances 4',
    (), 0, True, ('90fbbc37154e530f',),
    (
        (('ba6331dc70a3e989',),
         'Each product q_r k_r has variance 4 x 4 = 16, not 1.'),
        (('dcd8344a1791c393',),
         'That is the variance after dividing by sqrt(d_k).'),
        (('5fb5d4d7f5f6099f',),
         'Both factors have variance 4: each product has variance 4 x 4 = 16.'),
    ))
ANSWERS['scaling.var_scaled'] = Answer(
    'the variance of the scaled score q . k / sqrt(d_k) under the same assumptions',
    (), 0, True, ('5105a51048bf7b65',),
    (
        (('0a39c2b147626443',),
         'Scaling removes the factor d_k, not the scale of the inputs: 4 x 4 = 16 remains.'),
        (('59c0d7b0010cb872',),
         'Dividing by sqrt(d_k) divides the variance by d_k, not by sqrt(d_k).'),
    ))
ANSWERS['scaling.std_unscaled_64'] = Answer(
    'the standard deviation of an unscaled score for d_k = 64 with unit-variance coordinates',
    (), 0, True, ('5d12bf724d94f4fc',),
    (
        (('00f29eb271d84f93',),
         '64 is the variance; the standard deviation is its square root.'),
    ))
ANSWERS['scaling.dropout_rowsum_var'] = Answer(
    'the variance of the row sum after dropout with keep probability 0.9 on the row (0.5, 0.3, 0.2)',
    (), -5, False, ('cc4378fa300ca49c',),
    (
        (('e15c69281407b8ee',),
         'Each kept entry is divided by q, so the variance of each term is A^2 (1 - q) / q.'),
        (('307867e3484954da',),
         'The term m A / q has variance (A / q)^2 q (1 - q) = A^2 (1 - q) / q.'),
    ))
ANSWERS['masks.keys_visible_5_6'] = Answer(
    'how many keys the single query at absolute position 8 may read (keys at positions 0..8)',
    (), 0, True, ('7a660e3ec6d2dd31',),
    (
        (('6c0c8b0881b18053',),
         'That is the top-left triangle: it treats the query as position 0. Positions are absolute.'),
    ))
ANSWERS['masks.keys_lost_top_left'] = Answer(
    'how many of those keys a top-left-aligned 1 x 9 triangle wrongly forbids',
    (), 0, True, ('95b5cd64ca5769ae',),
    ())
ANSWERS['worked.padding_example'] = Answer(
    'the weights for logits [3.0, 0.5, -1.0, 2.0] when the last two keys are padding',
    (4,), -4, False, ('5f2bbd9fe6cdd191', '3789280b923d2138', 'fbf4ccb883163772', '9580afbd4b1ea442'),
    (
        (('097b34eb0902d916', '0aeff499dada3f7b', '2753ed9cbdf16c84', '19f890ac21ad5a5d'),
         'Those are the weights without the mask.'),
        (('097b34eb0902d916', '0aeff499dada3f7b', 'fbf4ccb883163772', '9580afbd4b1ea442'),
         'That is the mask applied after the softmax: the row no longer sums to 1.'),
    ))
ANSWERS["worked.weights_5_3"] = Answer(
    "the weights of the first query of the three-token example without the mask",
    (3,),
    -4,
    False,
    ("7366db0099914151", "056ca0b24f2a2261", "fb59db83c3312d27"),
    (
        (
            ("8aca4a8baa337d26", "59d2e49f79feaaf7", "eb2b8c2f33aed6fd"),
            "Those weights are unscaled: divide the scores by sqrt(2) first.",
        ),
        (
            ("3f5a323820ec98a9", "952482c1935645d6", "a85661b8bd87ac7c"),
            "Those are the causal weights; this exercise removes the mask.",
        ),
    ),
)
ANSWERS['worked.output_5_3'] = Answer(
    'the first output row of the three-token example without the mask',
    (2,), -3, False, ('ac0fdda15a21e83f', '1e4b39915e9c6234'),
    (
        (('ac0fdda15a21e83f', '5029aac7e70bed66'),
         'That row mixes the inputs X, not the values V.'),
    ))
ANSWERS['worked.output_5_3_v3_zero'] = Answer(
    'the same output row after replacing the third value vector by zero',
    (2,), -4, False, ('8f3c7d22b333c8eb', 'dd89c746947221ac'),
    (
        (('5dff2f6420dac347', '8de83879bc3b45f4'),
         'Zeroing a value does not remove its key: the weights stay (r, s, r).'),
    ))
ANSWERS['worked.four_token_output0'] = Answer(
    'the output of token 0 in the four-token example',
    (2,), -4, False, ('8f5345dd29e5fb31', 'a37960114001ed2a'),
    (
        (('386f54208dd407d5', '1142c270fe7d7a50'),
         'Unscaled: divide the scores by sqrt(d_k) = sqrt(2) first.'),
        (('bfa5933a22687d2e', '2ad87a3541603373'),
         "Those are the source's rounded numbers; compute the value to four significant digits."),
    ))
ANSWERS['worked.cross_attention'] = Answer(
    'the output O (3 x 2) of the cross-attention example with scores (0, 0), (log 3, 0), (0, log 3)',
    (3, 2), -3, False, ('c51475929d43f499', '06c274ea6609860c', 'b7b696a5d0568620', '4a53ca0ab2a75b67', '4e2f41f83589696d', 'ecc5f7b4341353c7'),  # noqa: E501
    ())
ANSWERS['backprop.dk1_5_5'] = Answer(
    'the gradient of L = o_{2,1} with respect to the first key',
    (2,), -4, False, ('8eb019172509b18e', 'e0af0eefa73be1ae'),
    (
        (('8eb019172509b18e', '1ea29cc2db7d7111'),
         'The 1/sqrt(d_k) of the scores is missing: dK = dS^T Q / sqrt(d_k).'),
        (('9392156a08305bba', 'f032f2d77570251b'),
         'dK_1 = dS_{2,1} q_2 / sqrt(2) and q_2 = (0, 1): only the second coordinate is nonzero.'),
    ))
ANSWERS['backprop.probe_J'] = Answer(
    'the probe loss J in the two-position example',
    (), -3, False, ('8fa88dfcaf07aa02',),
    ())
ANSWERS['backprop.dS'] = Answer(
    'the score gradient dS (2 x 2) in the two-position example',
    (2, 2), -3, False, ('9122092b262f2b09', '84876af455d5112d', '8e2e790556f80ef6', '7c42aa27eb990512'),
    (
        (('aee601bebeec7e46', '8417c097e4e6ddfa', 'b89b7269e90f8bda', '8236f3fd6c4fe6c4'),
         'That is A * dA without the row-mean term: each row of dS must sum to 0.'),
    ))
ANSWERS['multihead.params_h8'] = Answer(
    'the number of weights in W_Q, W_K, W_V, W_O for d = 512, H = 8 (no biases)',
    (), 0, True, ('0a29bbf7fc5274b1',),
    (
        (('f37254edb628c41c',),
         'Count W_O too: four d x d matrices.'),
    ))
ANSWERS['multihead.params_h64'] = Answer(
    'the same count for d = 512, H = 64',
    (), 0, True, ('5883d6be393d5fa0',),
    (
        (('a2d5fd5cfeef3e4a',),
         'Heads split the d features; they do not copy the matrices.'),
        (('0c66c02520c41467',),
         'Count W_O too: four d x d matrices.'),
    ))
ANSWERS['multihead.kv_ratio_5_11'] = Answer(
    'the KV-cache size with 8 KV heads divided by the size with 32',
    (), -4, False, ('79298d5eb1225573',),
    (
        (('91c2b1415254a678',),
         'The ratio new / old is 8 / 32.'),
    ))
ANSWERS['multihead.scores_ratio_5_11'] = Answer(
    'the number of attention scores with 8 KV heads divided by the number with 32',
    (), -3, False, ('dfa5a17e8e3a047e',),
    (
        (('9cc7cd38cec69626',),
         'Every one of the 32 query heads still computes its own T x S scores.'),
    ))
ANSWERS['multihead.gpt2_head_dim'] = Answer(
    'the head width d_k of GPT-2 small (d = 768, H = 12)',
    (), 0, True, ('738a25183d85c75f',),
    ())
ANSWERS['cost.kv_bytes_5_7'] = Answer(
    'the bytes of the KV cache of one layer with 6 KV heads of width 64, 2048 positions, 2 bytes each',
    (), 0, True, ('abe4d74c5de84c7e',),
    (
        (('e62563938289d87b',),
         'That is the MHA cache: GQA stores H_kv = 6 heads, not 24.'),
        (('617743a3b9d7ddf4',),
         'Keys and values: the factor 2 is missing.'),
    ))
ANSWERS['cost.kv_ratio_5_7'] = Answer(
    'the GQA cache divided by the MHA cache (6 vs 24 KV heads)',
    (), -4, False, ('5f9161658dfa80d6',),
    (
        (('c2ac0f9c940bc69d',),
         'The ratio GQA / MHA is 6 / 24.'),
    ))
ANSWERS['cost.attn_bytes_2k'] = Answer(
    'the bytes of one fp16 attention matrix for n = 2048 (one head, one sequence)',
    (), 0, True, ('ebfc5c70af3ade16',),
    (
        (('64eb8e4cbb3073a9',),
         'fp16 is 2 bytes per entry, not 4.'),
        (('32b16b835d9c18bf',),
         'Each fp16 entry takes 2 bytes.'),
    ))
ANSWERS['cost.attn_bytes_8k'] = Answer(
    'the same for n = 8192',
    (), 0, True, ('ef7faa510b558558',),
    (
        (('db16dfe0b7df480b',),
         'fp16 is 2 bytes per entry, not 4.'),
        (('95583d397b6f898d',),
         'Each fp16 entry takes 2 bytes.'),
    ))
ANSWERS['cost.weights_bytes_5_35'] = Answer(
    'the bytes of the weights B x H x T x S in fp16 for B = 2, H = 16, T = S = 4096',
    (), 0, True, ('9e6ad1fba3242854',),
    (
        (('0f68c517dd775526',),
         'Both sequences of the batch: B = 2.'),
    ))
ANSWERS['cost.flops_interaction'] = Answer(
    'the FLOPs of Q K^T and A V together for B = 1, H = 12, T = S = 1024, d_k = d_v = 64',
    (), 0, True, ('6b9cb77cd2570d33',),
    (
        (('57c7bd705fd27dbb',),
         'A multiply-add counts as 2 FLOPs.'),
        (('57c7bd705fd27dbb',),
         'Count both products, Q K^T and A V.'),
    ))
ANSWERS['structure.outputs_5_8'] = Answer(
    'the outputs of the two heads with scalar keys (0, 1), values (0, 1) and queries 0 and 1',
    (2,), -4, False, ('61873e2975de2b75', '94984738c5590a1a'),
    (
        (('61873e2975de2b75', 'ae7cd39ba4ee7e92'),
         'With query 1 the scores are (0, 1), so the weights are not uniform.'),
    ))
