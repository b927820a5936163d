"""What each explorer shows, computed by pure functions (no widgets, no drawing).

Every explorer is ``controls -> state -> picture + readout``. The functions here are the
first arrow: they take plain numbers and return a frozen dataclass of arrays and numbers,
computed with the reference package (``al.attention``, ``al.masks``, ``al.softmax``,
``al.grad.softmax_jacobian``, ``al.kv_head_for``). Tests call them directly; the widgets call
them on every control change and only draw what they return.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import cache_size
from .. import masks as M
from ..errors import AttentionInputError, EmptyVisibilityError
from ..grad import softmax_jacobian
from ..i18n import N_, _
from ..reference import attention, kv_head_for, softmax

# ----------------------------------------------------------------------------------------------
# Masks
# ----------------------------------------------------------------------------------------------

PATTERNS = ("none", "padding", "causal", "causal+padding", "documents", "sliding window", "cached decoding")
PATTERN_LABELS = {   # the menu entries; translated where a menu is built
    "none": N_("none (every query reads every key)"),
    "padding": N_("padding (per-sequence lengths)"),
    "causal": N_("causal"),
    "causal+padding": N_("causal + padding"),
    "documents": N_("packed documents (causal inside each)"),
    "sliding window": N_("sliding window"),
    "cached decoding": N_("cached decoding (T < S, offset)"),
}
_TABLE = 64          # rows of the fixed query/key tables, indexed by absolute position
MASK_D_K = 4         # width of the fixed random queries and keys


@dataclass(frozen=True)
class MaskState:
    """The allowed grid, the weights it produces, and how every query row is handled.

    ``row_status[i]`` is ``"ok"``, ``"padding"`` (query_valid False: zero row, by design) or
    ``"empty"`` (a valid query that may read no key: the reference raises
    EmptyVisibilityError, quoted in ``error``; with the mask applied after the softmax the
    row silently comes out as zeros instead). Weights of an ``"empty"`` row are shown as 0
    and its ``row_sums`` entry is NaN when the reference refuses the row.
    """

    pattern: str
    after_softmax: bool
    allowed: np.ndarray          # (T, S) bool, True = may read
    query_valid: np.ndarray      # (T,) bool, False = padding query
    q_positions: np.ndarray      # (T,) absolute positions of the queries
    logits: np.ndarray           # (T, S) scaled scores q.k / sqrt(d_k), before any mask
    weights: np.ndarray          # (T, S)
    row_sums: np.ndarray         # (T,)
    row_status: tuple[str, ...]
    error: str | None            # message of the EmptyVisibilityError the reference raised, if any

    @property
    def T(self) -> int:
        return self.allowed.shape[0]

    @property
    def S(self) -> int:
        return self.allowed.shape[1]


def fixed_qk(d_k: int = MASK_D_K, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Fixed random query and key tables, one row per absolute position (0 .. 63).

    Indexing by absolute position keeps a query's scores the same when T, S or the offset
    change around it; negative positions wrap around (they only occur for deliberately wrong
    offsets, whose rows are empty anyway).
    """
    rng = np.random.default_rng(seed)
    return rng.standard_normal((_TABLE, d_k)), rng.standard_normal((_TABLE, d_k))


def parse_ints(text, name: str) -> tuple[int, ...]:
    """'6, 4 1,0' -> (6, 4, 1, 0); a clear ValueError for anything else."""
    if isinstance(text, (tuple, list, np.ndarray)):
        items = list(text)
    else:
        items = str(text).replace(",", " ").split()
    try:
        out = tuple(int(x) for x in items)
    except (TypeError, ValueError):
        raise AttentionInputError(_("{name} must be integers separated by commas or spaces; got {text}").format(
            name=name, text=repr(text))) from None
    if not out:
        raise AttentionInputError(_("{name} must list at least one integer; got {text}").format(
            name=name, text=repr(text)))
    return out


def key_padding(lengths, S: int, side: str = "right") -> np.ndarray:
    """(B, S) real-key mask: right padding = real tokens first, left padding = real tokens last."""
    keep = M.padding(np.asarray(lengths, dtype=int), S)[:, 0, :]      # (B, S), True for j < L
    if side == "right":
        return keep
    if side == "left":
        return keep[:, ::-1].copy()                                  # True for j >= S - L
    raise AttentionInputError(_("side must be 'right' or 'left'; got {side}").format(side=repr(side)))


def mask_pattern(pattern: str, T: int = 6, S: int | None = None, offset: int | None = None,
                 lengths=(6, 4, 1, 0), seq: int = 0, side: str = "right", pad_queries_valid: bool = False,
                 doc_ids=(0, 0, 0, 1, 1, 2), window: int = 3):
    """The (allowed (T, S), query_valid (T,), query positions (T,)) of one named pattern.

    Only ``cached decoding`` uses S and offset (T new queries at absolute positions
    offset .. offset+T-1 against S cached keys; offset defaults to S - T). ``documents`` takes
    T from ``doc_ids``; a negative id marks a padding slot (no document). The padding
    patterns show sequence ``seq`` of a batch whose lengths are ``lengths``, padded to T.
    """
    if pattern not in PATTERNS:
        raise AttentionInputError(_("pattern must be one of {patterns}; got {pattern}").format(
            patterns=PATTERNS, pattern=repr(pattern)))
    if pattern == "documents":
        ids = np.asarray(parse_ints(doc_ids, "doc_ids"))
        T = len(ids)
    T = int(T)
    if T < 1:
        raise AttentionInputError(_("T must be >= 1; got {T}").format(T=T))
    q_pos = np.arange(T)
    valid = np.ones(T, dtype=bool)
    if pattern == "none":
        allowed = np.ones((T, T), dtype=bool)
    elif pattern == "causal":
        allowed = M.causal(T)
    elif pattern in ("padding", "causal+padding"):
        lengths = parse_ints(lengths, "lengths")
        if not 0 <= seq < len(lengths):
            raise AttentionInputError(_("seq must index one of the {n} sequences; got {seq}").format(
                n=len(lengths), seq=seq))
        if max(lengths) > T:
            raise AttentionInputError(_("every length must be <= T = {T} (the padded length); got {lengths}").format(
                T=T, lengths=list(lengths)))
        real = key_padding(lengths, T, side)[seq]                    # (T,) real tokens of sequence seq
        allowed = np.broadcast_to(real[None, :], (T, T)).copy()      # pads are never read as keys
        if pattern == "causal+padding":
            allowed &= M.causal(T)
        valid = real.copy() if not pad_queries_valid else valid
    elif pattern == "documents":
        real = ids >= 0
        allowed = M.documents(ids) & M.causal(T) & real[None, :]
        valid = real.copy()
    elif pattern == "sliding window":
        allowed = M.sliding_window(T, int(window))
    else:  # cached decoding
        S = T if S is None else int(S)
        offset = S - T if offset is None else int(offset)
        allowed = M.causal(T, S, offset)
        q_pos = offset + np.arange(T)
    return allowed, valid, q_pos


def mask_state(pattern: str = "causal", T: int = 6, S: int | None = None, offset: int | None = None,
               lengths=(6, 4, 1, 0), seq: int = 0, side: str = "right", pad_queries_valid: bool = False,
               doc_ids=(0, 0, 0, 1, 1, 2), window: int = 3, after_softmax: bool = False,
               seed: int = 0) -> MaskState:
    """Allowed grid and weights of one pattern for the fixed random queries and keys.

    With ``after_softmax`` the mask is (wrongly) applied to the weights instead of the
    scores: softmax over all S keys, then forbidden weights set to 0. Padding queries get
    zero rows either way (that part is query_valid, not the mask).
    """
    allowed, valid, q_pos = mask_pattern(pattern, T, S, offset, lengths, seq, side, pad_queries_valid,
                                         doc_ids, window)
    T, S = allowed.shape
    q_tab, k_tab = fixed_qk(seed=seed)
    q, k = q_tab[q_pos % _TABLE], k_tab[np.arange(S) % _TABLE]       # (T, d_k), (S, d_k)
    v = np.eye(S)                                                    # values are irrelevant here
    logits = q @ k.T / np.sqrt(MASK_D_K)                             # (T, S)
    empty = valid & ~allowed.any(axis=1)                             # valid query, nothing to read
    status = tuple("padding" if not ok else "empty" if e else "ok" for ok, e in zip(valid, empty))
    error = None
    if after_softmax:
        weights = softmax(logits) * allowed * valid[:, None]         # the mistake: mask after normalising
        sums = weights.sum(axis=1)
    else:
        try:
            weights = attention(q, k, v, allowed=allowed, query_valid=valid, return_weights=True)[1]
        except EmptyVisibilityError as exc:                          # show the other rows anyway
            error = str(exc)
            weights = attention(q, k, v, allowed=allowed, query_valid=valid & ~empty, return_weights=True)[1]
        sums = np.where(empty, np.nan, weights.sum(axis=1))
    return MaskState(pattern, bool(after_softmax), allowed, valid, q_pos, logits, weights, sums, status, error)


# ----------------------------------------------------------------------------------------------
# Convex combinations
# ----------------------------------------------------------------------------------------------

CONVEX_VALUES = np.array([[2.0, 0.4], [0.4, 1.9], [-1.6, 0.9], [-0.9, -1.5], [0.3, 0.2]])


@dataclass(frozen=True)
class ConvexState:
    """One query against 2-D keys = values: weights, output, and the hull it must lie in."""

    query: np.ndarray            # (2,)
    temperature: float
    values: np.ndarray           # (S, 2); the keys are the values themselves
    allowed: np.ndarray          # (S,) bool
    logits: np.ndarray           # (S,) q.k / temperature
    weights: np.ndarray          # (S,), zero where forbidden
    output: np.ndarray | None    # (2,) = weights @ values; None when every key is masked
    hull: np.ndarray             # (h, 2) vertices of the allowed values' hull, counter-clockwise
    centroid: np.ndarray | None  # mean of the allowed values (the tau -> infinity limit)
    argmax: int | None           # allowed key with the largest logit (the tau -> 0 limit)
    entropy: float               # of the weights, in nats
    error: str | None

    @property
    def equivalent_d_k(self) -> float:
        """Scaling by 1/sqrt(d_k) is temperature sqrt(d_k): tau = sqrt(d_k)."""
        return self.temperature ** 2


def hull_vertices(points) -> np.ndarray:
    """Vertices of the convex hull of 2-D points, counter-clockwise (the plots module's hull)."""
    from ..plots import _hull
    pts = np.asarray(points, dtype=float).reshape(-1, 2)
    return _hull(pts) if len(pts) else np.zeros((0, 2))


def convex_state(angle_deg: float = 20.0, length: float = 1.5, temperature: float = 1.0, masked=(),
                 values=None) -> ConvexState:
    """Query q = length * (cos angle, sin angle) reads keys = values with scale 1/temperature."""
    v = CONVEX_VALUES if values is None else np.asarray(values, dtype=float)
    if v.ndim != 2 or v.shape[1] != 2:
        raise AttentionInputError(_("values must have shape (S, 2); got {shape}").format(shape=v.shape))
    if not (np.isfinite(temperature) and temperature > 0):
        raise AttentionInputError(_("temperature must be a finite positive number; got {temperature}").format(
            temperature=repr(temperature)))
    S = len(v)
    allowed = np.ones(S, dtype=bool)
    for j in masked:
        if not 0 <= int(j) < S:
            raise AttentionInputError(_("masked keys must lie in [0, {S}); got {j}").format(S=S, j=repr(j)))
        allowed[int(j)] = False
    theta = np.deg2rad(angle_deg)
    q = float(length) * np.array([np.cos(theta), np.sin(theta)])
    logits = v @ q / temperature
    hull = hull_vertices(v[allowed])
    try:
        out, w = attention(q[None, :], v, v, allowed=allowed[None, :], scale=1.0 / temperature,
                           return_weights=True)
    except EmptyVisibilityError as exc:
        return ConvexState(q, float(temperature), v, allowed, logits, np.zeros(S), None, hull, None, None,
                           float("nan"), str(exc))
    w = w[0]
    nz = w[w > 0]
    entropy = float(-(nz * np.log(nz)).sum())
    argmax = int(np.flatnonzero(allowed)[np.argmax(logits[allowed])])
    return ConvexState(q, float(temperature), v, allowed, logits, w, out[0], hull, v[allowed].mean(axis=0),
                       argmax, entropy, None)


# ----------------------------------------------------------------------------------------------
# Scaling
# ----------------------------------------------------------------------------------------------

D_K_VALUES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)


@dataclass(frozen=True)
class ScalingState:
    """Logits of random unit-variance q, k, and what the softmax does with them."""

    d_k: int
    scaled: bool
    S: int
    logits: np.ndarray           # (n, S): q.k, times 1/sqrt(d_k) when scaled
    logit_std: float             # empirical standard deviation
    logit_std_theory: float      # sqrt(d_k) unscaled, 1 scaled
    max_weight: float            # mean over rows of the largest weight
    entropy: float               # mean entropy of a row, nats
    max_entropy: float           # log S (uniform weights)
    jacobian_norm: float         # mean Frobenius norm of diag(a) - a a^T over rows
    jacobian_norm_uniform: float # the same at uniform weights, for comparison
    saturated: float             # fraction of rows whose largest weight exceeds 0.99


def scaling_samples(d_k: int, S: int = 16, n: int = 200, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """n random queries and S random keys with i.i.d. N(0, 1) entries (a fixed draw per d_k)."""
    rng = np.random.default_rng([seed, int(d_k)])
    return rng.standard_normal((n, d_k)), rng.standard_normal((S, d_k))


def scaling_state(d_k: int = 64, scaled: bool = True, S: int = 16, n: int = 200, seed: int = 0) -> ScalingState:
    """Softmax statistics for random q, k: unscaled logits have variance d_k, scaled ones 1."""
    d_k, S = int(d_k), int(S)
    if d_k < 1 or S < 1:
        raise AttentionInputError(_("d_k and S must be >= 1; got d_k={d_k}, S={S}").format(d_k=d_k, S=S))
    q, k = scaling_samples(d_k, S, n, seed)
    c = 1.0 / np.sqrt(d_k) if scaled else 1.0
    logits = (q @ k.T) * c                                             # (n, S)
    a = softmax(logits)                                                # (n, S)
    with np.errstate(divide="ignore", invalid="ignore"):
        ent = -np.where(a > 0, a * np.log(a), 0.0).sum(axis=1)
    jac = np.linalg.norm(softmax_jacobian(a), axis=(-2, -1))           # (n,)
    uniform = np.full(S, 1.0 / S)
    return ScalingState(d_k, bool(scaled), S, logits, float(logits.std()), float(np.sqrt(d_k) * c),
                        float(a.max(axis=1).mean()), float(ent.mean()), float(np.log(S)), float(jac.mean()),
                        float(np.linalg.norm(softmax_jacobian(uniform))), float((a.max(axis=1) > 0.99).mean()))


def scaling_sweep(S: int = 16, n: int = 200, seed: int = 0, d_ks=D_K_VALUES) -> dict:
    """Mean max weight and Jacobian norm against d_k, scaled and unscaled (for the side plot)."""
    out = {}
    for scaled in (False, True):
        states = [scaling_state(d, scaled, S, n, seed) for d in d_ks]
        out[scaled] = {"max_weight": np.array([s.max_weight for s in states]),
                       "jacobian_norm": np.array([s.jacobian_norm for s in states]),
                       "entropy": np.array([s.entropy for s in states])}
    return out


# ----------------------------------------------------------------------------------------------
# Grouped-query attention
# ----------------------------------------------------------------------------------------------

DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float8_e4m3fn": 1}


@dataclass(frozen=True)
class GQAState:
    """Which KV head each query head reads, and what the KV cache costs."""

    n_heads: int
    n_kv_heads: int
    kv_for: tuple[int, ...]                     # kv_for[h] = KV head read by query head h
    groups: tuple[tuple[int, ...], ...] = ()   # groups[g] = query heads sharing KV head g
    cache_bytes: int = 0                        # 2 (K and V) * layers * batch * H_kv * T * d_k * bytes
    mha_bytes: int = 0                          # the same with H_kv = H (plain multi-head attention)
    mqa_bytes: int = 0                          # the same with H_kv = 1 (multi-query attention)
    settings: dict = field(default_factory=dict)
    error: str | None = None

    @property
    def group_size(self) -> int:
        return self.n_heads // self.n_kv_heads if self.error is None else 0

    @property
    def kind(self) -> str:
        if self.error:
            return "invalid"
        return "MHA" if self.n_kv_heads == self.n_heads else "MQA" if self.n_kv_heads == 1 else "GQA"


def kv_cache_bytes(n_kv_heads: int, n_layers: int, T: int, d_k: int, dtype: str = "float16", batch: int = 1) -> int:
    """Bytes of a KV cache: K and V, each (batch, H_kv, T, d_k), in every layer (al.kv_cache_bytes).

    The explorer's argument order and its dtype menu (DTYPE_BYTES); the formula is the package's.
    """
    if dtype not in DTYPE_BYTES:
        raise AttentionInputError(_("dtype must be one of {dtypes}; got {dtype}").format(
            dtypes=tuple(DTYPE_BYTES), dtype=repr(dtype)))
    return cache_size.kv_cache_bytes(int(n_kv_heads), int(T), int(d_k), n_layers=int(n_layers), batch=int(batch),
                                     dtype=dtype)


def gqa_state(n_heads: int = 8, n_kv_heads: int = 2, n_layers: int = 32, T: int = 4096, d_k: int = 128,
              dtype: str = "float16", batch: int = 1) -> GQAState:
    """Head sharing for H query heads over H_kv KV heads (al.kv_head_for) and the cache size."""
    settings = {"n_layers": int(n_layers), "T": int(T), "d_k": int(d_k), "dtype": dtype, "batch": int(batch)}
    try:
        kv_for = tuple(kv_head_for(h, n_heads, n_kv_heads) for h in range(n_heads))
    except AttentionInputError as exc:
        return GQAState(int(n_heads), int(n_kv_heads), (), settings=settings, error=str(exc))
    groups = tuple(tuple(h for h in range(n_heads) if kv_for[h] == g) for g in range(n_kv_heads))
    size = lambda h_kv: kv_cache_bytes(h_kv, n_layers, T, d_k, dtype, batch)  # noqa: E731
    return GQAState(int(n_heads), int(n_kv_heads), kv_for, groups, size(n_kv_heads), size(n_heads), size(1),
                    settings)


def human_bytes(n: float) -> str:
    """1536 -> '1.50 KiB' (binary units)."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    return f"{n:.2f} TiB"
