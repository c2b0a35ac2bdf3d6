"""Generic Hypothesis strategies for checks.

In Hypothesis's own style (plural names, ``min_*``/``max_*`` arguments, ``st.composite``). Tensors
are built from a drawn *seed*, not drawn element by element, so a shrunk counterexample reads
``shape=(1, 2, 3, 16), seed=7`` instead of a dump of numbers, and the same text replays it.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from hypothesis import strategies as st

FLOAT_DTYPES: tuple[torch.dtype, ...] = (torch.float32, torch.float16, torch.bfloat16)


def seeds(max_value: int = 2**16) -> st.SearchStrategy[int]:
    """Small non-negative seeds (shrink towards 0)."""
    return st.integers(min_value=0, max_value=max_value)


@st.composite
def shapes(
    draw: st.DrawFn,
    *,
    min_dims: int = 1,
    max_dims: int = 4,
    min_side: int = 1,
    max_side: int = 8,
) -> tuple[int, ...]:
    """A tensor shape with ``min_dims..max_dims`` dimensions of ``min_side..max_side`` each."""
    ndim = draw(st.integers(min_value=min_dims, max_value=max_dims))
    return tuple(draw(st.integers(min_value=min_side, max_value=max_side)) for _ in range(ndim))


def dtypes(allowed: Sequence[torch.dtype] = FLOAT_DTYPES) -> st.SearchStrategy[torch.dtype]:
    """One of ``allowed`` (shrinks towards the first)."""
    return st.sampled_from(list(allowed))


def tensor(
    shape: Sequence[int],
    seed: int,
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
    *,
    low: float | None = None,
    high: float | None = None,
    scale: float = 1.0,
) -> torch.Tensor:
    """A tensor determined entirely by ``(shape, seed, dtype)``.

    Floating point: standard normal times ``scale`` (or uniform in ``[low, high)`` when both are
    given), drawn in fp32 on the CPU and then cast, so CPU and CUDA runs see the same values.
    Integer dtypes: uniform in ``[low, high)`` (default ``[0, 10)``). Bool: fair coin flips.
    """
    g = torch.Generator(device="cpu")
    g.manual_seed(int(seed))
    shape = tuple(int(s) for s in shape)
    if dtype == torch.bool:
        out = torch.rand(shape, generator=g) < 0.5
    elif dtype.is_floating_point:
        if low is not None and high is not None:
            out = torch.rand(shape, generator=g, dtype=torch.float32) * (high - low) + low
        else:
            out = torch.randn(shape, generator=g, dtype=torch.float32) * scale
        if dtype == torch.float64:
            g.manual_seed(int(seed))
            out = (torch.randn(shape, generator=g, dtype=torch.float64) * scale
                   if low is None or high is None
                   else torch.rand(shape, generator=g, dtype=torch.float64) * (high - low) + low)
        out = out.to(dtype)
    else:
        lo = 0 if low is None else int(low)
        hi = 10 if high is None else int(high)
        out = torch.randint(lo, hi, shape, generator=g, dtype=dtype)
    return out.to(device)


@st.composite
def tensors(
    draw: st.DrawFn,
    *,
    shape: Sequence[int] | st.SearchStrategy[tuple[int, ...]] | None = None,
    dtype: torch.dtype | st.SearchStrategy[torch.dtype] = torch.float32,
    device: str = "cpu",
    scale: float = 1.0,
) -> torch.Tensor:
    """A tensor built by :func:`tensor` from a drawn shape and seed (both appear in notes)."""
    from hypothesis import note

    if shape is None:
        shape = shapes()
    if isinstance(shape, st.SearchStrategy):
        shape = draw(shape)
    if isinstance(dtype, st.SearchStrategy):
        dtype = draw(dtype)
    seed = draw(seeds())
    note(f"tensor(shape={tuple(shape)}, seed={seed}, dtype={str(dtype).replace('torch.', '')})")
    return tensor(shape, seed, dtype, device, scale=scale)


def non_contiguous(t: torch.Tensor, how: str = "transpose") -> torch.Tensor:
    """The same values as ``t`` in a non-contiguous layout.

    ``transpose``: stored with its last two dims swapped, then transposed back (a view with
    swapped strides); ``slice``: every other element of a twice-as-wide buffer.
    """
    if t.dim() < 2 and how == "transpose":
        how = "slice"
    if how == "transpose":
        return t.transpose(-1, -2).contiguous().transpose(-1, -2)
    wide = torch.zeros(*t.shape[:-1], t.shape[-1] * 2, dtype=t.dtype, device=t.device)
    wide[..., ::2] = t
    return wide[..., ::2]


def hidden_keys_with_huge_scores(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor
                                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, str]:
    """Causal inputs whose keys hidden from query 0 score above 1e4, exactly: ``(q, k, v, note)``.

    ``q``, ``k``, ``v``: ``(B, H, T, D)`` (``k``/``v`` may have fewer heads) with ``seq_k > seq_q``
    bottom-right aligned, so query 0 sees keys ``0..seq_k - seq_q``. Every query entry becomes a
    positive multiple of 0.5 and every hidden key ``2^15``, so with ``head_dim`` 4 or 16 (a
    power-of-two scale) each score is exact in any summation order; the hidden keys share one value
    row, so a row that sees them outputs it whatever the rounding of their equal scores. A finite
    additive mask such as ``-1e4`` leaves weight on them; ``-inf`` (or ``tl.where``) does not.
    """
    seq_q, seq_k = q.shape[-2], k.shape[-2]
    off = seq_k - seq_q
    q = (q.abs() * 2).round() / 2 + 0.5
    k = k.clone()
    k[..., off + 1:, :] = 2.0**15
    v = v.clone()
    v[..., off + 1:, :] = v[..., off + 1:off + 2, :].clone()
    text = (f"q = round(2|q|) / 2 + 0.5; keys {off + 1}..{seq_k - 1} (hidden from query 0) are "
            "all 2^15 and share one value row")
    return q, k, v, text
