"""Exercise checkers that say what went wrong.

Each ``check_*`` function runs a student's function on a battery of cases and returns a
:class:`CheckResult` (``.passed``, ``.message``; a green, red or grey note in Jupyter). When
the output is wrong, the checker compares it with deliberately wrong implementations
(:mod:`attnlab.checks.mistakes`) and names the classic mistake it matches. A stub that raises
``NotImplementedError`` is "not attempted yet"; an exception or a wrong shape becomes a
message, never a traceback. ``check_answer(name, value)`` checks numeric answers.
"""
from .answers import check_answer
from .attention import check_attention, check_scores
from .backward import check_attention_backward, check_softmax_backward
from .causal import check_causal_attention, check_leak_test
from .chunked import check_chunked_attention
from .cost import check_kv_cache_bytes
from .heads import check_gqa_attention, check_kv_head_map, check_merge_heads, check_mha_from_torch, check_split_heads
from .masks import check_causal_mask, check_document_mask, check_padding_mask
from .result import CheckResult
from .softmax import check_dropout, check_softmax
from .structure import check_equivariance_test, check_permute_mask

__all__ = [
    "CheckResult",
    "check_answer",
    "check_attention",
    "check_attention_backward",
    "check_causal_attention",
    "check_causal_mask",
    "check_chunked_attention",
    "check_document_mask",
    "check_dropout",
    "check_equivariance_test",
    "check_gqa_attention",
    "check_kv_cache_bytes",
    "check_kv_head_map",
    "check_leak_test",
    "check_merge_heads",
    "check_mha_from_torch",
    "check_padding_mask",
    "check_permute_mask",
    "check_scores",
    "check_softmax",
    "check_softmax_backward",
    "check_split_heads",
]
