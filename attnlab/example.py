"""The book's running example: the sentence "Mia said she won", followed from chapter 1 to the cache.

The numbers are made up and small on purpose, so that every score, weight and output can be
followed by hand (pen and paper, or SymPy). No model was trained to produce them; they are
chosen so that each chapter's idea shows clearly.

**The tokens and their embeddings.** Four tokens, ``T = 4``, each with an embedding of
``d_model = 4`` features (one row of ``X`` per token, the book's row-vector convention)::

                 a    b   pronoun  name
    X =  Mia   [ 1    1     0       1 ]
         said  [ 0    1     0       0 ]
         she   [ 1    0     1       0 ]
         won   [1/2  1/2    0       0 ]

Features ``a`` and ``b`` are the four vectors of the source material's example (chapter 4,
"Four tokens with d_k = 2"); ``pronoun`` and ``name`` mark the one pronoun and the one name.

**Two heads of width ``d_k = d_v = 2``.** ``W_Q``, ``W_K``, ``W_V`` are ``(d_model, 2 d_k)``,
head 0's columns first (the layout of ``al.multi_head_attention``), and ``W_O = I``:

* Head 0, :data:`SIMILARITY`, reads features ``a`` and ``b`` as queries and keys
  (``Q = K``, so every score is a similarity ``q_i . k_j``), and its values are the source's
  ``V``: this head *is* the source's four-token example (Q = K = (1, 1), (0, 1), (1, 0),
  (1/2, 1/2); V = (1, 0), (0, 1), (1, 1), (1/2, 1/2)), so chapter 4 checks the source's
  numbers on it. With ``Q = K`` a token can only look for tokens like itself.
* Head 1, :data:`PRONOUN`, has different query and key projections: only the pronoun feature
  makes a query, ``q_she = (2, 0)`` ("I am looking for a name"), and only the name feature
  makes a key, ``k_Mia = (2, 0)`` ("I am a name"). The one non-zero score is
  ``q_she . k_Mia = 4``; scaled by ``1/sqrt(2)`` it gives *she* the weight
  ``e^(2 sqrt 2) / (e^(2 sqrt 2) + 3) = 0.849`` on *Mia*, the clear preference the prose
  explains. Every other query is zero and spreads its weight evenly. Its values are features
  ``a`` and ``b``, so *she*'s output (0.925, 0.925) lands near *Mia*'s value (1, 1).

**What each chapter takes from it** (``ex = al.example``):

=========================  ===============================================================
chapter                    call
=========================  ===============================================================
1, queries/keys/values     ``ex.tokens``, ``ex.X``, ``ex.projections(head)``, ``ex.qkv(head)``,
                           ``ex.scores(head)``, ``ex.attention(head)`` (exact=True: SymPy)
2, scaling and softmax     ``ex.scores(head, scaled=False)``, then scaled and soft-maxed
3, masks                   ``ex.attention(head, causal=True)``, ``ex.causal_allowed()``,
                           ``ex.padded_batch()`` ("she won" padded to four tokens)
4, worked examples         ``ex.qkv(ex.SIMILARITY, exact=True)``: the source's Q, K, V
5, backpropagation         ``ex.upstream_gradient()``, ``ex.loss(O)``: L = first coordinate
                           of *she*'s output
6, multi-head              ``ex.layer()``: both heads, concatenated, ``W_O``
12, KV cache               ``ex.decode(head)``: one :class:`DecodeStep` per token
=========================  ===============================================================

Every array comes in two forms: ``exact=True`` gives SymPy matrices (rationals, closed forms
of the weights), the default gives float64 NumPy arrays. The module-level arrays (``X``,
``W_Q``, ...) are read-only: copy them before editing. ``words()`` gives the tokens for labels:
the English ``tokens`` in every language, as both editions' prose names them (*Mia*, *she*).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy as sp

from . import exact as _exact
from . import masks as _masks
from .errors import AttentionInputError
from .i18n import N_, _
from .reference import attention as _attention
from .reference import multi_head_attention as _multi_head_attention

__all__ = [
    "DecodeStep", "FEATURES", "HEAD_NAMES", "LOSS_TOKEN", "PAD", "PRONOUN", "PaddedBatch", "SIMILARITY",
    "T", "W_K", "W_K_exact", "W_O", "W_O_exact", "W_Q", "W_Q_exact", "W_V", "W_V_exact", "X", "X_exact",
    "attention", "causal_allowed", "d_k", "d_model", "d_v", "decode", "layer", "loss", "n_heads",
    "padded_batch", "projections", "qkv", "scores", "tokens", "upstream_gradient", "words",
]

half = sp.Rational(1, 2)

tokens = ("Mia", "said", "she", "won")
FEATURES = ("a", "b", "pronoun", "name")
PAD = "<pad>"
T, d_model, n_heads, d_k, d_v = 4, 4, 2, 2, 2
SIMILARITY, PRONOUN = 0, 1                       # the two heads
HEAD_NAMES = (N_("similarity head"), N_("pronoun head"))
LOSS_TOKEN = tokens.index("she")                 # chapter 5's loss reads this token's output

X_exact = sp.Matrix([
    [1, 1, 0, 1],          # Mia
    [0, 1, 0, 0],          # said
    [1, 0, 1, 0],          # she
    [half, half, 0, 0],    # won
])

# Projections, (d_model, n_heads * d_k): columns 0-1 are head 0 (similarity), 2-3 head 1 (pronoun).
W_Q_exact = sp.Matrix([
    [1, 0, 0, 0],          # a       -> head 0's query coordinate 0
    [0, 1, 0, 0],          # b       -> head 0's query coordinate 1
    [0, 0, 2, 0],          # pronoun -> head 1's query: "looking for a name"
    [0, 0, 0, 0],          # name
])
W_K_exact = sp.Matrix([
    [1, 0, 0, 0],          # head 0: keys equal queries (Q = K)
    [0, 1, 0, 0],
    [0, 0, 0, 0],
    [0, 0, 2, 0],          # name    -> head 1's key: "I am a name"
])
W_V_exact = sp.Matrix([
    [1, 0, 1, 0],          # head 0: V = (a, b + pronoun - name), the source's values
    [0, 1, 0, 1],          # head 1: V = (a, b)
    [0, 1, 0, 0],
    [0, -1, 0, 0],
])
W_O_exact = sp.eye(n_heads * d_v)   # each head writes its two numbers into two features of the output


def _frozen(M) -> np.ndarray:
    a = np.array(M.tolist(), dtype=np.float64) if isinstance(M, sp.MatrixBase) else np.asarray(M, dtype=np.float64)
    a.flags.writeable = False
    return a


X = _frozen(X_exact)
W_Q, W_K, W_V, W_O = (_frozen(M) for M in (W_Q_exact, W_K_exact, W_V_exact, W_O_exact))


def words() -> tuple[str, ...]:
    """The four tokens as figures label them: the English tokens in every language, the data the
    example is made of (the Chinese edition's prose names them in italics too, *Mia*, *she*)."""
    return tokens


def _head(head) -> int:
    if isinstance(head, str) and head in ("similarity", "pronoun"):
        return ("similarity", "pronoun").index(head)
    if isinstance(head, (int, np.integer)) and not isinstance(head, bool) and 0 <= head < n_heads:
        return int(head)
    raise AttentionInputError(_("head must be 0 (similarity), 1 (pronoun), 'similarity' or 'pronoun'; "
                                "got {head}").format(head=repr(head)))


def _columns(M, h: int, exact: bool):
    block = M[:, h * d_k:(h + 1) * d_k]          # (d_model, d_k): head h's columns
    return block if exact else _frozen(block)


def projections(head=PRONOUN, exact: bool = False):
    """(W_Q, W_K, W_V) of one head, each (d_model, d_k) = (4, 2)."""
    h = _head(head)
    return tuple(_columns(W, h, exact) for W in (W_Q_exact, W_K_exact, W_V_exact))


def qkv(head=PRONOUN, exact: bool = False):
    """(Q, K, V) of one head, each (T, d_k) = (4, 2): ``X @ W`` for the head's three projections."""
    wq, wk, wv = projections(head, exact=True)
    out = (X_exact * wq, X_exact * wk, X_exact * wv)
    return out if exact else tuple(_frozen(M) for M in out)


def scores(head=PRONOUN, scaled: bool = True, exact: bool = False):
    """(T, T) scores ``Q K^T``, divided by ``sqrt(d_k)`` unless ``scaled=False``."""
    Q, K, _V = qkv(head, exact=exact)
    if exact:
        return Q * K.T / (sp.sqrt(d_k) if scaled else 1)      # (T, T)
    return _frozen(Q @ K.T / (np.sqrt(d_k) if scaled else 1.0))


def causal_allowed() -> np.ndarray:
    """(T, T) causal mask, True = may read: each token reads itself and the tokens before it."""
    return _masks.causal(T)


def attention(head=PRONOUN, causal: bool = False, exact: bool = False):
    """(O, A) of one head: outputs (T, d_v) and weights (T, T), optionally with the causal mask.

    ``exact=True`` computes with ``al.exact.attention`` (closed forms such as
    ``exp(2*sqrt(2)) / (exp(2*sqrt(2)) + 3)``), the default with ``al.attention`` in float64.
    """
    allowed = causal_allowed() if causal else None
    if exact:
        return _exact.attention(*qkv(head, exact=True), allowed=allowed)
    return _attention(*qkv(head), allowed=allowed, return_weights=True)


def layer(causal: bool = False, exact: bool = False):
    """Both heads as one multi-head layer: (Y (T, d_model), A (n_heads, T, T)).

    Y = concat(O_0, O_1) @ W_O; float64 through ``al.multi_head_attention``; exact head by head, with
    A a list of the heads' SymPy weight matrices.
    """
    if not exact:
        return _multi_head_attention(X, X, W_Q, W_K, W_V, W_O, n_heads,
                                     allowed=causal_allowed() if causal else None, return_weights=True)
    per_head = [attention(h, causal=causal, exact=True) for h in range(n_heads)]
    C = sp.Matrix.hstack(*(O for O, _A in per_head))          # (T, n_heads * d_v)
    return (C * W_O_exact).applyfunc(sp.simplify), [A for _O, A in per_head]


@dataclass(frozen=True)
class PaddedBatch:
    """The example batched with a shorter sentence, "she won", padded to T with zero embeddings.

    ``X`` (B, T, d_model) with B = 2 (exact: a list of two SymPy matrices); ``lengths`` (2,) = (4, 2);
    ``tokens`` with ``PAD`` in the padding slots; ``allowed`` (B, 1, T) key-padding mask
    (``al.masks.padding``), True = real key; ``query_valid`` (B, T), False for a padding query.
    """

    X: object
    lengths: np.ndarray
    tokens: tuple
    allowed: np.ndarray
    query_valid: np.ndarray


def padded_batch(exact: bool = False) -> PaddedBatch:
    """The batch of chapter 3's padding masks: "Mia said she won" and "she won" + two pads."""
    she, won = X_exact.row(2), X_exact.row(3)
    second = sp.Matrix.vstack(she, won, sp.zeros(2, d_model))     # (T, d_model), pads are zero rows
    lengths = np.array([T, 2])
    batch_tokens = (tokens, ("she", "won", PAD, PAD))
    if exact:
        Xb = [X_exact, second]
    else:
        Xb = np.stack([X, _frozen(second)])                           # (B, T, d_model)
        Xb.flags.writeable = False
    allowed = _masks.padding(lengths, T)                              # (B, 1, T)
    return PaddedBatch(Xb, lengths, batch_tokens, allowed, allowed[:, 0, :].copy())


def upstream_gradient(exact: bool = False):
    """dO (T, d_v) of chapter 5's loss ``L = O[she, 0]``: 1 at (she, 0), zero elsewhere."""
    G = sp.zeros(T, d_v)
    G[LOSS_TOKEN, 0] = 1
    return G if exact else _frozen(G)


def loss(O):
    """Chapter 5's loss: the first coordinate of *she*'s output, ``L = sum(dO * O)`` for dO above."""
    return O[LOSS_TOKEN, 0]


@dataclass(frozen=True)
class DecodeStep:
    """Token ``t`` decoded with a KV cache: its query reads the cached keys and values 0 .. t.

    ``q``, ``k``, ``v`` (d_k,) are the new token's; ``K_cache``, ``V_cache`` (t + 1, d_k) hold every
    key and value so far, the new ones appended last; ``weights`` (t + 1,), ``output`` (d_v,).
    """

    t: int
    token: str
    q: object
    k: object
    v: object
    K_cache: object
    V_cache: object
    weights: object
    output: object


def decode(head=PRONOUN, exact: bool = False) -> list[DecodeStep]:
    """The example decoded token by token (chapter 12): step t appends k_t, v_t, then q_t reads 0 .. t.

    Step t's weights and output equal row t of ``attention(head, causal=True)``: a cache needs no
    mask, because it holds no future token. With ``exact=True`` the vectors are 1-row SymPy matrices.
    """
    Q, K, V = qkv(head, exact=exact)
    steps = []
    for t in range(T):
        q, K_cache, V_cache = Q[t:t + 1, :], K[:t + 1, :], V[:t + 1, :]   # (1, d_k), (t + 1, d_k), (t + 1, d_v)
        if exact:
            O, A = _exact.attention(q, K_cache, V_cache)
        else:
            O, A = _attention(q, K_cache, V_cache, return_weights=True)
        steps.append(DecodeStep(t, tokens[t], q[0, :], K[t, :], V[t, :], K_cache, V_cache, A[0, :], O[0, :]))
    return steps
