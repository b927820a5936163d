"""The catalogue of mistakes each checker can name, for instructors and for the tests.

Most diagnoses come from mistake models (:mod:`attnlab.checks.mistakes`): the student's output
matches a deliberately wrong implementation. A few come from properties instead (random
dropout masks, the dtype of a mask, the future-perturbation test); they are listed here too,
so that this catalogue is the complete list of what a red note can say.
"""
from __future__ import annotations

import re

from . import attention, backward, causal, chunked, cost, heads, masks, softmax, structure
from .diagnose import Mistake

_MASK_DTYPE = [
    Mistake("additive", "an additive mask (0 / -inf) was returned instead of a boolean one.", None),
    Mistake("not_boolean", "the mask is not boolean (e.g. 0/1 integers).", None),
]

CATALOGUE: dict[str, list[Mistake]] = {
    "check_softmax": softmax.SOFTMAX_MISTAKES,
    "check_dropout": softmax.DROPOUT_MISTAKES + [
        Mistake("p_is_keep_probability", "p was used as the keep probability instead of the drop probability.",
                None),
        Mistake("shared_mask", "one keep/drop mask was shared by every row.", None),
        Mistake("ignores_rng", "the random numbers do not come from the rng argument.", None),
        Mistake("reseeds", "the function re-seeds its own generator on every call.", None),
    ],
    "check_scores": attention.SCORES_MISTAKES,
    "check_attention": attention.ATTENTION_MISTAKES + attention.MASK_MISTAKES + attention.EMPTY_ROW_MISTAKES,
    "check_causal_mask": masks.CAUSAL_MASK_MISTAKES + _MASK_DTYPE,
    "check_padding_mask": masks.PADDING_MISTAKES + _MASK_DTYPE,
    "check_document_mask": masks.DOCUMENT_MISTAKES + _MASK_DTYPE,
    "check_causal_attention": causal.CAUSAL_MISTAKES + [
        Mistake("future_leakage", "the future-perturbation test: changing future keys and values changed an "
                "earlier output, or a future weight is not exactly 0.", None),
    ],
    "check_leak_test": causal.LEAK_TEST_MISTAKES,
    "check_softmax_backward": backward.SOFTMAX_BACKWARD_MISTAKES,
    "check_attention_backward": backward.DQ_MISTAKES + backward.DK_MISTAKES + backward.DV_MISTAKES,
    "check_split_heads": heads.SPLIT_MISTAKES,
    "check_merge_heads": heads.MERGE_MISTAKES,
    "check_kv_head_map": heads.HEAD_MAP_MISTAKES,
    "check_gqa_attention": heads.GQA_MISTAKES,
    "check_mha_from_torch": heads.MHA_MISTAKES,
    "check_chunked_attention": chunked.CHUNKED_MISTAKES,
    "check_kv_cache_bytes": cost.KV_MISTAKES,
    "check_equivariance_test": structure.EQUIVARIANCE_TEST_MISTAKES,
    "check_permute_mask": structure.PERMUTE_MASK_MISTAKES,
    "check_answer": [Mistake("known_wrong_answer", "a known wrong number, with what it usually means "
                                                   "(e.g. the unscaled value, the MHA cache).", None)],
}


def mistake_names(checker: str) -> list[str]:
    """The distinct mistake names a checker can report, in catalogue order."""
    seen = []
    for mistake in CATALOGUE[checker]:
        if mistake.name not in seen:
            seen.append(mistake.name)
    return seen


def summary(explanation: str) -> str:
    """The first sentence of an explanation, for a short table entry."""
    first = re.split(r"(?<=[A-Za-z0-9)\]])\. (?=[A-Z`(])", explanation.strip())[0]
    return first.rstrip(".") + "."
