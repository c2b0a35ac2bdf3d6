"""Quantization reference: integer (absmax and zero-point), packed int4, fp8 / fp4 emulation and
MX block scaling.

Sources:
- Integer quantization, absmax (symmetric) and zero-point (asymmetric): Jacob et al. 2018,
  "Quantization and Training of Neural Networks for Efficient Integer-Arithmetic-Only Inference".
- The outlier problem and why scaling is done per channel or per block: Dettmers et al. 2022,
  "LLM.int8(): 8-bit Matrix Multiplication for Transformers at Scale". Weight-only per-group int4 is
  what GPTQ (Frantar et al. 2023) and AWQ (Lin et al. 2024) produce; this module implements the
  storage format (round-to-nearest), not their error-compensating searches.
- FP8 formats: "OCP 8-bit Floating Point Specification (OFP8)", revision 1.0 (2023): E4M3 has no
  infinity and a single NaN mantissa, so its largest finite value is 448 (torch calls it
  ``float8_e4m3fn``); E5M2 follows IEEE conventions, largest finite 57344.
- MX block scaling: "OCP Microscaling Formats (MX) Specification", version 1.0 (2023): blocks of
  32 elements share one power-of-two scale stored as E8M0; the shared exponent is
  ``floor(log2(max|x|)) - emax_elem`` and the elements are converted with saturation.

Conventions used throughout:
- Rounding is round-half-to-even (``torch.round``), the IEEE default.
- Weights are 2-D ``(out_features, in_features)``; "per channel" means one scale per output row,
  "per group" one scale per ``group_size`` consecutive input elements of a row.
- Symmetric quantization to ``b`` bits uses the *restricted* range ``[-(2^(b-1) - 1), 2^(b-1) - 1]``
  (int8: [-127, 127]) so that ``-q`` is always representable and zero maps to code 0.
- A group whose values are all zero gets scale 1.0 (any positive scale would do; 1.0 avoids a
  division by zero and makes every code 0).
- Packed int4: two 4-bit codes per byte, element ``2j`` in the low nibble (bits 0-3) and element
  ``2j + 1`` in the high nibble (bits 4-7). Signed codes are stored as 4-bit two's complement.

Everything here is device-agnostic: tensors stay on the device they arrive on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor

Granularity = Literal["tensor", "channel", "group"]


# --------------------------------------------------------------------------------------------
# Integer quantization
# --------------------------------------------------------------------------------------------


def qmax_symmetric(bits: int) -> int:
    """Largest code of the restricted symmetric range: 127 for int8, 7 for int4."""
    return 2 ** (bits - 1) - 1


def _grouped(w: Tensor, granularity: Granularity, group_size: int | None) -> Tensor:
    """View a 2-D weight as ``(rows, groups, group_len)`` for the given granularity."""
    if w.dim() != 2:
        raise ValueError(f"expected a 2-D weight (out, in), got shape {tuple(w.shape)}")
    out, n = w.shape
    if granularity == "tensor":
        return w.reshape(1, 1, out * n)  # (1, 1, out*in)
    if granularity == "channel":
        return w.reshape(out, 1, n)  # (out, 1, in)
    if granularity == "group":
        if group_size is None or group_size <= 0 or n % group_size:
            raise ValueError(f"group_size must divide in_features={n}, got {group_size}")
        return w.reshape(out, n // group_size, group_size)  # (out, in/g, g)
    raise ValueError(f"unknown granularity {granularity!r}")


def _scale_shape(w: Tensor, granularity: Granularity, group_size: int | None) -> tuple[int, ...]:
    out, n = w.shape
    if granularity == "tensor":
        return ()
    if granularity == "channel":
        return (out,)
    assert group_size is not None
    return (out, n // group_size)


def quantize_absmax(
    w: Tensor, bits: int = 8, granularity: Granularity = "channel", group_size: int | None = None
) -> tuple[Tensor, Tensor]:
    """Symmetric (absmax) quantization of a 2-D weight.

    ``scale = max|w| / qmax`` per tensor, row or group (1.0 where the max is 0);
    ``q = clamp(round(w / scale), -qmax, qmax)``.

    Returns ``(q, scale)``: ``q`` int8 with ``w``'s shape (codes of ``bits <= 8`` bits, unpacked),
    ``scale`` float32 of shape ``()`` (tensor), ``(out,)`` (channel) or ``(out, in/group_size)``
    (group).
    """
    if not 2 <= bits <= 8:
        raise ValueError(f"bits must be in [2, 8], got {bits}")
    qmax = qmax_symmetric(bits)
    wg = _grouped(w.float(), granularity, group_size)  # (R, G, g)
    amax = wg.abs().amax(dim=-1, keepdim=True)  # (R, G, 1)
    scale = torch.where(amax > 0, amax / qmax, torch.ones_like(amax))  # scale = absmax / qmax
    q = torch.clamp(torch.round(wg / scale), -qmax, qmax).to(torch.int8)  # (R, G, g)
    return q.reshape(w.shape), scale.reshape(_scale_shape(w, granularity, group_size))


def quantize_zero_point(
    w: Tensor, bits: int = 8, granularity: Granularity = "channel", group_size: int | None = None
) -> tuple[Tensor, Tensor, Tensor]:
    """Asymmetric (zero-point) quantization to unsigned codes ``[0, 2^bits - 1]``.

    The range is widened to include zero, so zero is exactly representable:
    ``lo = min(min w, 0)``, ``hi = max(max w, 0)``, ``scale = (hi - lo) / (2^bits - 1)`` (1.0 when
    ``hi == lo``), ``zero = clamp(round(-lo / scale), 0, 2^bits - 1)``,
    ``q = clamp(round(w / scale) + zero, 0, 2^bits - 1)``.

    Returns ``(q uint8, scale float32, zero int32)``; ``scale`` and ``zero`` have the shapes listed in
    :func:`quantize_absmax`.
    """
    if not 2 <= bits <= 8:
        raise ValueError(f"bits must be in [2, 8], got {bits}")
    levels = 2**bits - 1
    wg = _grouped(w.float(), granularity, group_size)  # (R, G, g)
    lo = wg.amin(dim=-1, keepdim=True).clamp(max=0)  # (R, G, 1)
    hi = wg.amax(dim=-1, keepdim=True).clamp(min=0)
    scale = torch.where(hi > lo, (hi - lo) / levels, torch.ones_like(hi))
    zero = torch.clamp(torch.round(-lo / scale), 0, levels)  # the code that represents 0.0
    q = torch.clamp(torch.round(wg / scale) + zero, 0, levels).to(torch.uint8)
    shape = _scale_shape(w, granularity, group_size)
    return q.reshape(w.shape), scale.reshape(shape), zero.to(torch.int32).reshape(shape)


def _expand(t: Tensor, w_shape: torch.Size) -> Tensor:
    """Broadcast a per-tensor / per-row / per-group parameter to the weight's shape."""
    if t.dim() == 0:
        return t
    out, n = w_shape
    if t.dim() == 1:
        return t.reshape(out, 1)  # (out, 1)
    return t.repeat_interleave(n // t.shape[1], dim=1)  # (out, in)


def dequantize(q: Tensor, scale: Tensor, zero: Tensor | None = None) -> Tensor:
    """Inverse of the quantizers above: ``(q - zero) * scale`` as float32, for any granularity."""
    qf = q.to(torch.float32)
    if zero is not None:
        qf = qf - _expand(zero.to(torch.float32), q.shape)
    return qf * _expand(scale.to(torch.float32), q.shape)


def quantize_int8_per_channel(w: Tensor) -> tuple[Tensor, Tensor]:
    """The ``quantize`` challenge's int8 interface: symmetric, one scale per output row.

    Returns ``(q int8 (out, in), scale float32 (out,))``.
    """
    return quantize_absmax(w, bits=8, granularity="channel")


def dequantize_int8(q: Tensor, scale: Tensor) -> Tensor:
    """``q (out, in) int8``, ``scale (out,)`` -> float32 ``(out, in)`` = ``q * scale[:, None]``."""
    return q.to(torch.float32) * scale.to(torch.float32)[:, None]


def quantize_int4_per_group(w: Tensor, group_size: int) -> tuple[Tensor, Tensor]:
    """The ``quantize`` challenge's int4 interface: symmetric per-group int4, packed.

    Codes in [-7, 7], packed two per byte (see :func:`pack_int4`, signed). Returns
    ``(packed uint8 (out, in/2), scale float32 (out, in/group_size))``.
    """
    q, scale = quantize_absmax(w, bits=4, granularity="group", group_size=group_size)
    return pack_int4(q, signed=True), scale


def dequantize_int4_per_group(packed: Tensor, scale: Tensor) -> Tensor:
    """Inverse of :func:`quantize_int4_per_group`: float32 ``(out, in)``."""
    q = unpack_int4(packed, signed=True)  # (out, in)
    return dequantize(q, scale)


# --------------------------------------------------------------------------------------------
# int4 packing
# --------------------------------------------------------------------------------------------


def pack_int4(q: Tensor, signed: bool = True) -> Tensor:
    """Pack 4-bit codes two per byte along the last dimension (which must be even).

    ``q``: integer tensor ``(..., n)`` with values in [-8, 7] (``signed``) or [0, 15].
    Returns uint8 ``(..., n/2)``: byte ``j`` = ``(q[2j] & 0xF) | ((q[2j+1] & 0xF) << 4)``, i.e.
    element ``2j`` in the low nibble. Signed codes become 4-bit two's complement (-1 -> 0xF).
    """
    if q.shape[-1] % 2:
        raise ValueError(f"the last dimension must be even to pack int4, got {q.shape[-1]}")
    lo_bound, hi_bound = (-8, 7) if signed else (0, 15)
    qi = q.to(torch.int32)
    if qi.numel() and (int(qi.min()) < lo_bound or int(qi.max()) > hi_bound):
        raise ValueError(f"codes out of range [{lo_bound}, {hi_bound}]")
    nib = qi & 0xF  # two's complement nibble for negatives
    low, high = nib[..., 0::2], nib[..., 1::2]  # (..., n/2) each
    return (low | (high << 4)).to(torch.uint8)


def unpack_int4(packed: Tensor, signed: bool = True) -> Tensor:
    """Inverse of :func:`pack_int4`: uint8 ``(..., m)`` -> int8 ``(..., 2m)``."""
    p = packed.to(torch.int32)
    low, high = p & 0xF, (p >> 4) & 0xF  # (..., m) each
    out = torch.stack((low, high), dim=-1).reshape(*packed.shape[:-1], 2 * packed.shape[-1])
    if signed:
        out = torch.where(out >= 8, out - 16, out)  # sign-extend the nibble
    return out.to(torch.int8)


# --------------------------------------------------------------------------------------------
# Low-precision floating point (fp8 / fp4) emulation
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FloatFormat:
    """A small binary floating-point format (sign, ``exp_bits`` exponent, ``man_bits`` mantissa)."""

    name: str
    """Short name, e.g. ``e4m3``."""
    exp_bits: int
    """Exponent field width."""
    man_bits: int
    """Mantissa (fraction) field width."""
    bias: int
    """Exponent bias."""
    max_value: float
    """Largest finite magnitude (448 for E4M3, where the top mantissa of the top exponent is NaN)."""
    has_inf: bool
    """Whether the format encodes infinities (E5M2 does; E4M3 "fn" and E2M1 do not)."""
    torch_dtype: str | None = None
    """Name of the matching ``torch`` dtype, when torch has one."""

    @property
    def min_exp(self) -> int:
        """Exponent of the smallest normal number (``1 - bias``); below it numbers are subnormal."""
        return 1 - self.bias

    @property
    def emax(self) -> int:
        """Exponent of the largest normal number, used by MX scaling (8 for E4M3, 15 for E5M2)."""
        return math.floor(math.log2(self.max_value))

    @property
    def min_subnormal(self) -> float:
        """Smallest positive value: ``2^(min_exp - man_bits)``."""
        return 2.0 ** (self.min_exp - self.man_bits)


FP8_E4M3 = FloatFormat("e4m3", 4, 3, 7, 448.0, False, "float8_e4m3fn")
FP8_E5M2 = FloatFormat("e5m2", 5, 2, 15, 57344.0, True, "float8_e5m2")
FP4_E2M1 = FloatFormat("e2m1", 2, 1, 1, 6.0, False, None)
FORMATS = {f.name: f for f in (FP8_E4M3, FP8_E5M2, FP4_E2M1)}


def round_to_format(x: Tensor, fmt: FloatFormat | str, saturate: bool = True) -> Tensor:
    """Round float values to the nearest value of ``fmt`` (round-half-to-even), as float32.

    Normal and subnormal ranges are both handled: the spacing of representable values near ``x`` is
    ``2^(max(floor(log2|x|), min_exp) - man_bits)``. Values beyond ``max_value`` after rounding:
    with ``saturate`` (the OCP "saturating" conversion, which ML frameworks use) they and infinities
    clamp to ``+-max_value``; without it they become ``inf`` (formats with infinities) or ``NaN``.
    NaN stays NaN. Within range the result equals ``torch``'s casts to ``float8_e4m3fn`` /
    ``float8_e5m2`` bit for bit (the tests check it); beyond range torch 2.13 on CPU saturates E4M3
    and overflows E5M2 to inf, i.e. ``saturate=True`` and ``False`` respectively.
    """
    f = FORMATS[fmt] if isinstance(fmt, str) else fmt
    xf = x.to(torch.float32)
    finite = torch.isfinite(xf)
    safe = torch.where(finite, xf, torch.zeros_like(xf))
    _, e = torch.frexp(safe)  # safe = m * 2^e with |m| in [0.5, 1)
    exp = torch.clamp(e - 1, min=f.min_exp)  # floor(log2|x|), held at min_exp for subnormals
    shift = f.man_bits - exp  # quantum = 2^-shift
    y = torch.ldexp(torch.round(torch.ldexp(safe, shift)), -shift)  # round half to even on the grid
    over = y.abs() > f.max_value
    if saturate:
        y = torch.where(over, torch.sign(y) * f.max_value, y)
        y = torch.where(torch.isinf(xf), torch.sign(xf) * f.max_value, y)
    else:
        overflow = torch.full_like(y, math.inf) if f.has_inf else torch.full_like(y, math.nan)
        y = torch.where(over, torch.copysign(overflow, y), y)
        y = torch.where(torch.isinf(xf), xf if f.has_inf else torch.full_like(y, math.nan), y)
    return torch.where(torch.isnan(xf), xf, y)


def quantize_fp8(
    x: Tensor, fmt: FloatFormat | str = FP8_E4M3, granularity: Granularity = "tensor"
) -> tuple[Tensor, Tensor]:
    """Scaled fp8 quantization of a 2-D tensor: ``scale = amax / fmt.max_value`` (1.0 if amax is 0),
    values ``round_to_format(x / scale)`` (emulated, float32). Returns ``(values, scale)``; the
    dequantized tensor is ``values * scale`` (broadcast as in :func:`dequantize`)."""
    f = FORMATS[fmt] if isinstance(fmt, str) else fmt
    xg = _grouped(x.float(), granularity, None)  # (R, 1, n)
    amax = xg.abs().amax(dim=-1, keepdim=True)  # (R, 1, 1)
    scale = torch.where(amax > 0, amax / f.max_value, torch.ones_like(amax))
    values = round_to_format(xg / scale, f, saturate=True)
    return values.reshape(x.shape), scale.reshape(_scale_shape(x, granularity, None))


# --------------------------------------------------------------------------------------------
# MX (microscaling) block formats
# --------------------------------------------------------------------------------------------

MX_BLOCK = 32
"""Block size of the OCP MX v1.0 concrete formats (MXFP8, MXFP6, MXFP4, MXINT8)."""


def mx_quantize(
    x: Tensor, fmt: FloatFormat | str = FP8_E4M3, block: int = MX_BLOCK
) -> tuple[Tensor, Tensor]:
    """Quantize along the last dimension in MX blocks (OCP MX v1.0, section 6.3).

    ``x``: ``(..., n)`` with ``n`` a multiple of ``block``. For each block:
    ``shared_exp = clamp(floor(log2(max|x_i|)) - emax_elem, -127, 127)`` (E8M0 holds
    2^-127 .. 2^127; an all-zero block gets -127), and each element is
    ``round_to_format(x_i / 2^shared_exp)`` with saturation.

    The scaled block maximum lands in ``[2^emax, 2^(emax+1))``, which can exceed the element
    format's ``max_value`` (E4M3: 448 < 512): such values are clamped, an error of up to 12.5 %
    for FP8 and 25 % for FP4 on the block's largest elements — a known cost of the v1.0 rule.

    Returns ``(elements float32 (..., n), shared_exp int32 (..., n/block))``; dequantize with
    :func:`mx_dequantize`.
    """
    f = FORMATS[fmt] if isinstance(fmt, str) else fmt
    n = x.shape[-1]
    if n % block:
        raise ValueError(f"last dimension {n} is not a multiple of the block size {block}")
    xb = x.to(torch.float32).reshape(*x.shape[:-1], n // block, block)  # (..., n/B, B)
    amax = xb.abs().amax(dim=-1)  # (..., n/B)
    _, e = torch.frexp(amax)
    shared = torch.where(amax > 0, (e - 1) - f.emax, torch.full_like(e, -127))
    shared = shared.clamp(-127, 127).to(torch.int32)  # E8M0 range (255 is NaN)
    elems = round_to_format(torch.ldexp(xb, -shared.unsqueeze(-1)), f, saturate=True)
    return elems.reshape(x.shape), shared


def mx_dequantize(elements: Tensor, shared_exp: Tensor, block: int = MX_BLOCK) -> Tensor:
    """``elements (..., n)``, ``shared_exp (..., n/block)`` -> float32 ``(..., n)``."""
    n = elements.shape[-1]
    eb = elements.to(torch.float32).reshape(*elements.shape[:-1], n // block, block)
    return torch.ldexp(eb, shared_exp.unsqueeze(-1).to(torch.int32)).reshape(elements.shape)


def bits_per_weight(bits: int, group_size: int | None, scale_bits: int = 16,
                    zero_bits: int = 0) -> float:
    """Storage cost of a block-scaled format, scales included: ``bits + (scale_bits + zero_bits) /
    group_size``. int4 with one fp16 scale per 128 weights: 4.125; MXFP4 (E8M0 scale per 32): 4.25;
    MXFP8: 8.25. ``group_size=None`` means the scale's cost is negligible (per tensor or channel)."""
    if group_size is None:
        return float(bits)
    return bits + (scale_bits + zero_bits) / group_size


# --------------------------------------------------------------------------------------------
# The outlier problem
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OutlierReport:
    """Reconstruction error of one int quantization with one large outlier in the weight."""

    outlier: float
    """Magnitude of the single outlier."""
    per_tensor_error: float
    """Mean absolute error on the non-outlier entries with one scale for the whole tensor."""
    per_channel_error: float
    """Same, with one scale per row."""
    per_group_error: float
    """Same, with one scale per ``group_size`` elements of a row."""
    zeroed_fraction_per_tensor: float
    """Fraction of non-zero weights that quantize to code 0 with the per-tensor scale."""


def outlier_demo(
    rows: int = 64, cols: int = 256, group_size: int = 32, outlier: float = 100.0,
    bits: int = 8, seed: int = 0,
) -> OutlierReport:
    """Show why one extreme value ruins a shared scale (Dettmers et al. 2022).

    Draws ``N(0, 1)`` weights, sets ``w[0, 0] = outlier``, and quantizes with absmax at three
    granularities. The per-tensor scale is ``outlier / qmax``, so every ordinary weight is coded
    with a step tens of times too coarse (many round to 0); per-channel confines the damage to the
    outlier's row and per-group to its group.
    """
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(rows, cols, generator=g)  # (rows, cols)
    w[0, 0] = outlier
    normal = torch.ones_like(w, dtype=torch.bool)
    normal[0, 0] = False

    def err(gran: Granularity) -> tuple[float, Tensor]:
        q, s = quantize_absmax(w, bits, gran, group_size if gran == "group" else None)
        return float((dequantize(q, s) - w).abs()[normal].mean()), q

    e_t, q_t = err("tensor")
    e_c, _ = err("channel")
    e_g, _ = err("group")
    zeroed = float(((q_t == 0) & (w != 0) & normal).sum()) / float(normal.sum())
    return OutlierReport(outlier, e_t, e_c, e_g, zeroed)
