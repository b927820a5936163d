"""The book's drawn diagrams: SVG pictures made by code, labelled in the page's language.

Each function below returns a :class:`Diagram`. Jupyter and the book show it as SVG
(``_repr_svg_``); ``d.save("pipeline.svg")`` writes it; ``d.svg(lang="zh_CN")`` draws it in
Chinese whatever the current language. Labels go through attnlab's catalog
(``attnlab/locale/zh_CN/LC_MESSAGES/attnlab.po``) when the picture is drawn, so a page executed
for the Chinese edition (``ATTNLAB_LANG=zh_CN``) gets Chinese labels with no change to the cell.
Every SVG carries its alternative text, a description of what it shows, as the first child
``<title>`` of the root, ``role="img"`` and ``aria-label``; ``d.alt()`` returns it.

**Showing a diagram as a numbered figure.** A code cell with its input hidden and myst-nb's
figure options, named after the diagram's ``label`` (every label starts with ``diag-``)::

    ```{code-cell} ipython3
    :tags: [hide-input]
    :mystnb:
    :  figure:
    :    caption: |
    :      The pipeline of one attention head, with the shape of every matrix: the running
    :      example's four tokens, and the weights of its pronoun head in A.
    :    name: diag-qkv-pipeline
    al.diagrams.qkv_pipeline(example=True)
    ```

and ``{numref}`diag-qkv-pipeline``` in the prose. The caption is translated with the page
(``make translations`` extracts it into ``locale/zh_CN/LC_MESSAGES/chapters/<page>.po``; the
page must have been executed, as captions of outputs exist only then). A page showing one
diagram twice names the second ``diag-qkv-pipeline-2`` (a figure name is unique in the book).
The HTML shows the SVG as an image: in dark mode on the same white card as the matplotlib
figures, on a phone never narrower than where its smallest text reads at 9 px (the SVG carries
``data-min-text-px``; ``_ext/legible_figures.py`` turns it into the image's minimum width, and
the picture scrolls in its box). The PDF converts it with rsvg-convert
(sphinxcontrib-svg2pdfconverter); its fonts are DejaVu and, for Chinese, Noto Sans CJK SC.

**The diagrams** (``DIAGRAMS`` maps each label to its function and chapter):

====================================  ==========================================================  ===========
function                              what it shows                                               chapter
====================================  ==========================================================  ===========
``transformer_block()``               where attention sits: residual stream, norm, attention,     01_qkv
                                      norm, MLP (a decoder-only, pre-norm block)
``qkv_pipeline(example=True)``        X -> W_Q, W_K, W_V -> Q, K, V -> U = QK^T/sqrt(d_k) ->      01_qkv
                                      softmax -> A -> O = AV, every shape (symbols, or numbers)
``who_reads_whom(kinds)``             a mask as who may read whom: the example's tokens, an       03_masks
                                      arrow per allowed read ("full", "causal", "padding")
``backward_graph()``                  forward values and backward gradients, dO -> dA, dV ->      05_backprop
                                      dU -> dQ, dK, with their shapes
``head_split(n_heads, d_model, T)``   split into heads (view, transpose), attend per head,        06_multihead
                                      merge (transpose, concatenate), W_O
``kv_sharing(n_heads, kv_heads)``     MHA, GQA, MQA: query heads and the key/value heads they     06_multihead
                                      read (h // r); what the cache holds
``rope_rotation(m, n, shift)``        RoPE on one 2-D pair: query and key turned by m theta and   07_position
                                      n theta; the angle between them depends on n - m
``flash_tiling(nq, nk, causal)``      the online softmax / FlashAttention schedule: blocks,       09_flash
                                      causal skips, m, l, o updates, HBM / SRAM / registers
``split_kv(n_splits, S)``             split-KV decoding: chunks of the cache give (m, l, o),      09_flash
                                      merged by log-sum-exp                                       (or 12)
``decode_step(step)``                 one decoding step: the new token's q against the cached    12_kv_cache
                                      K, V (the example's numbers); k, v appended
``paged_cache(block_size, ...)``      paged KV cache: fixed-size blocks in a shared pool, one     12_kv_cache
                                      block table per sequence
``mla_absorption()``                  MLA: the latent cache C; explicit K, V rebuilt, or W_UK     12_kv_cache
                                      absorbed into the query and W_UV into W_O
====================================  ==========================================================  ===========

Drawing a new one: write a function that draws on a ``_draw.Canvas`` (boxes, arrows, matrix
glyphs; labels with ``$math$`` as in :mod:`._text`) and wraps it in a ``Diagram`` with its label
and alt text; ``tests/attnlab/diagrams`` then checks it in both languages.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ._draw import Diagram, check_layout
from .backward import backward_graph
from .block import transformer_block
from .decode import decode_step, split_kv
from .heads import head_split, kv_sharing
from .mla import mla_absorption
from .paged import paged_cache
from .pipeline import qkv_pipeline
from .reads import who_reads_whom
from .rope import rope_rotation
from .tiling import flash_tiling


@dataclass(frozen=True)
class Entry:
    """A diagram of the book: the function that draws it and the chapter that shows it."""

    function: Callable[..., Diagram]
    chapter: str


DIAGRAMS = {
    "diag-transformer-block": Entry(transformer_block, "01_qkv"),
    "diag-qkv-pipeline": Entry(qkv_pipeline, "01_qkv"),
    "diag-who-reads-whom": Entry(who_reads_whom, "03_masks"),
    "diag-backward-graph": Entry(backward_graph, "05_backprop"),
    "diag-head-split": Entry(head_split, "06_multihead"),
    "diag-kv-sharing": Entry(kv_sharing, "06_multihead"),
    "diag-rope-rotation": Entry(rope_rotation, "07_position"),
    "diag-flash-tiling": Entry(flash_tiling, "09_flash"),
    "diag-split-kv": Entry(split_kv, "09_flash"),
    "diag-decode-step": Entry(decode_step, "12_kv_cache"),
    "diag-paged-cache": Entry(paged_cache, "12_kv_cache"),
    "diag-mla-absorption": Entry(mla_absorption, "12_kv_cache"),
}


def all_diagrams() -> list[Diagram]:
    """Every diagram of the book, drawn with its default arguments."""
    return [entry.function() for entry in DIAGRAMS.values()]


__all__ = ["DIAGRAMS", "Diagram", "Entry", "all_diagrams", "backward_graph", "check_layout", "decode_step",
           "flash_tiling", "head_split", "kv_sharing", "mla_absorption", "paged_cache", "qkv_pipeline",
           "rope_rotation", "split_kv", "transformer_block", "who_reads_whom"]
