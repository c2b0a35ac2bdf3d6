"""FlashAttention forward pass as a Triton kernel: exact attention without the score matrix.

Dao et al. 2022, *FlashAttention: Fast and Memory-Efficient Exact Attention with IO-Awareness*;
Dao 2023, *FlashAttention-2: Faster Attention with Better Parallelism and Work Partitioning*.

The bottleneck of naive attention is memory traffic, not arithmetic: it writes the
``seq_q x seq_k`` scores to HBM, reads them back for the softmax, writes the probabilities, and
reads them again for ``p @ v``. This kernel keeps a block of ``BLOCK_M`` queries in on-chip memory
(registers/SRAM), streams the keys and values past it ``BLOCK_N`` at a time, and folds each block
into the output with the online softmax of Milakov & Gimelshein 2018: carry the running row maximum
``m`` and row sum ``l``, rescale the accumulator by ``exp(m_old - m_new)`` when the maximum grows,
and divide by ``l`` once at the end (FlashAttention-2's deferred normalisation). HBM traffic drops
from ``O(T^2)`` to ``O(T^2 D^2 / SRAM)``; the flops are the same and the answer is the same.

Layout follows FlashAttention-2: one program per (query block, batch x head), the loop over key
blocks inside the program, ``exp2`` with ``log2(e)`` folded into the scale, and for a causal mask the
loop stops at the last key block the query block can see. The causal mask is bottom-right aligned
(query ``i`` sees keys ``j <= i + seq_k - seq_q``), the convention of FlashAttention >= 2.1 and of a
decoder reading its KV cache.

On a machine without CUDA the kernel runs in Triton's interpreter (``TRITON_INTERPRET=1``, set
below before ``@triton.jit`` runs; fp32 only there). ``flash_attention_ref`` is the twin with the
same signature, computed the naive way.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

if not torch.cuda.is_available():
    # The interpreter must be chosen before @triton.jit decorates the kernel.
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from inferview.reference.attention import attention  # noqa: E402
from triton.runtime.errors import OutOfResources  # noqa: E402

LOG2E = 1.4426950408889634  # log2(e): exp(x) == exp2(x * log2(e))
HEAD_DIMS = (16, 32, 64, 128)


# Row reductions through tl.reduce with combine functions defined here (and tl.full, not tl.zeros):
# tl.max, tl.sum and tl.zeros are themselves @triton.jit functions, fixed in compiled mode if anything
# imported triton before TRITON_INTERPRET was set; the interpreter cannot call those. Ours follow this
# module's mode.
@triton.jit
def _max_combine(a, b):
    return tl.maximum(a, b)


@triton.jit
def _sum_combine(a, b):
    return a + b


@triton.jit
def flash_attention_kernel(
    q_ptr,  # *T: queries (B, H, Tq, D), any strides
    k_ptr,  # *T: keys (B, H, Tk, D), any strides
    v_ptr,  # *T: values (B, H, Tk, D), any strides
    o_ptr,  # *T: output (B, H, Tq, D), written here
    stride_qb, stride_qh, stride_qm, stride_qd,  # q strides in elements: batch, head, row, dim
    stride_kb, stride_kh, stride_kn, stride_kd,  # k strides
    stride_vb, stride_vh, stride_vn, stride_vd,  # v strides
    stride_ob, stride_oh, stride_om, stride_od,  # o strides
    num_heads,  # H: to split program_id(1) into (batch, head)
    seq_q,  # Tq: rows of q (need not be a multiple of BLOCK_M)
    seq_k,  # Tk: rows of k and v (need not be a multiple of BLOCK_N)
    qk_scale,  # sm_scale * log2(e): scores are built directly in base 2
    CAUSAL: tl.constexpr,  # bottom-right causal mask: key j visible to query i iff j <= i + Tk - Tq
    BLOCK_M: tl.constexpr,  # queries per program
    BLOCK_N: tl.constexpr,  # keys per loop step
    HEAD_DIM: tl.constexpr,  # D: 16, 32, 64 or 128
    DOT_PRECISION: tl.constexpr,  # "ieee" for fp32 inputs (no TF32 rounding), "tf32" otherwise
):
    pid_m = tl.program_id(0)  # which block of queries
    pid_bh = tl.program_id(1)  # which (batch, head)
    b = (pid_bh // num_heads).to(tl.int64)
    h = (pid_bh % num_heads).to(tl.int64)

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)  # query rows of this program: (BM,)
    offs_n = tl.arange(0, BLOCK_N)  # key rows within a block: (BN,)
    offs_d = tl.arange(0, HEAD_DIM)  # (D,)
    mask_m = offs_m < seq_q  # tail of the last query block

    q_ptrs = q_ptr + b * stride_qb + h * stride_qh \
        + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qd  # (BM, D)
    q = tl.load(q_ptrs, mask=mask_m[:, None], other=0.0)  # stays on chip for the whole loop
    k_base = k_ptr + b * stride_kb + h * stride_kh
    v_base = v_ptr + b * stride_vb + h * stride_vh

    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)  # running max of scores (base 2)
    l_i = tl.full([BLOCK_M], 0.0, dtype=tl.float32)  # running sum of exp2(s - m)
    acc = tl.full([BLOCK_M, HEAD_DIM], 0.0, dtype=tl.float32)  # running sum of exp2(s - m) v

    offset = seq_k - seq_q  # bottom-right alignment: query i is at absolute position i + offset
    if CAUSAL:
        # The last query of this block sees keys < min(Tq, (pid_m + 1) BM) + offset: stop there.
        hi = tl.minimum((pid_m + 1) * BLOCK_M, seq_q) + offset
    else:
        hi = seq_k

    for start_n in range(0, hi, BLOCK_N):
        offs_kn = start_n + offs_n  # key rows of this step: (BN,)
        mask_n = offs_kn < seq_k  # tail of the last key block
        kt_ptrs = k_base + offs_kn[None, :] * stride_kn + offs_d[:, None] * stride_kd  # k^T: (D, BN)
        kt = tl.load(kt_ptrs, mask=mask_n[None, :], other=0.0)
        s = tl.dot(q, kt, input_precision=DOT_PRECISION) * qk_scale  # s = q k^T scale log2e: (BM, BN)
        valid = mask_n[None, :]
        if CAUSAL:
            valid = valid & (offs_kn[None, :] <= offs_m[:, None] + offset)
        s = tl.where(valid, s, float("-inf"))

        # Every row sees key 0 in the first block (Tq <= Tk when causal), so m_new is finite.
        m_new = tl.maximum(m_i, tl.reduce(s, 1, _max_combine))  # m' = max(m, max_j s_j)
        alpha = tl.exp2(m_i - m_new)  # rescale the old sums: 2^(m - m')
        p = tl.exp2(s - m_new[:, None])  # (BM, BN); masked entries give 2^-inf = 0
        l_i = l_i * alpha + tl.reduce(p, 1, _sum_combine)  # l' = 2^(m - m') l + sum_j 2^(s_j - m')

        v_ptrs = v_base + offs_kn[:, None] * stride_vn + offs_d[None, :] * stride_vd  # (BN, D)
        v = tl.load(v_ptrs, mask=mask_n[:, None], other=0.0)
        acc = acc * alpha[:, None]  # acc' = 2^(m - m') acc + p v
        acc = tl.dot(p.to(v.dtype), v, acc, input_precision=DOT_PRECISION)
        m_i = m_new

    o = acc / l_i[:, None]  # normalise once, at the end (FlashAttention-2)
    o_ptrs = o_ptr + b * stride_ob + h * stride_oh \
        + offs_m[:, None] * stride_om + offs_d[None, :] * stride_od
    tl.store(o_ptrs, o.to(o_ptr.dtype.element_ty), mask=mask_m[:, None])


@dataclass(frozen=True)
class KernelConfig:
    """Launch parameters: tile sizes and, on GPU, warps and pipeline stages."""

    block_m: int
    block_n: int
    num_warps: int = 4
    num_stages: int = 2


def interpreting() -> bool:
    """Whether Triton kernels run in the CPU interpreter (``TRITON_INTERPRET=1``)."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def kernel_configs(head_dim: int, dtype: torch.dtype, on_cuda: bool) -> tuple[KernelConfig, ...]:
    """Launch configurations to try, fastest first; no autotuning (it would run every one on the CPU).

    The first suits data-centre GPUs (A100, H100: 160-228 KiB of shared memory per block). Each
    later one needs less shared memory, so that a GPU with less (64 KiB on a T4, about 100 KiB on
    consumer Ampere/Ada/Blackwell cards) still runs the kernel. Shared memory per config and target
    as Triton compiles it (bytes, causal, head_dim 128): fp16 128x64 with 3 stages needs 48 KiB on
    sm_80/sm_90 but 96 KiB on sm_75; 64x64 with 2 stages needs 64 KiB there, 64x32 48 KiB.
    """
    if not on_cuda:
        return (KernelConfig(block_m=32, block_n=32),)  # the interpreter: few, wide numpy steps
    if dtype == torch.float32:
        return (KernelConfig(block_m=64, block_n=32, num_warps=4, num_stages=2),
                KernelConfig(block_m=32, block_n=32, num_warps=4, num_stages=1))
    return (KernelConfig(block_m=128, block_n=64, num_warps=4 if head_dim <= 64 else 8, num_stages=3),
            KernelConfig(block_m=64, block_n=64, num_warps=4, num_stages=2),
            KernelConfig(block_m=64, block_n=32, num_warps=4, num_stages=2))


# The configuration that launched, per (device, dtype, head_dim, causal): the fallback search runs once.
_working_config: dict[tuple, KernelConfig] = {}


def launch_with_fallback(key: tuple, configs: tuple[KernelConfig, ...],
                         launch: Callable[[KernelConfig], None]) -> KernelConfig:
    """Call ``launch(cfg)`` with the first config the device can hold, remembering it under ``key``.

    Triton raises ``OutOfResources`` when it loads a compiled kernel whose shared memory exceeds the
    device's limit, before anything runs, so the next (smaller) config can simply be tried.
    """
    known = _working_config.get(key)
    if known is not None:
        launch(known)
        return known
    last_error: OutOfResources | None = None
    for cfg in configs:
        try:
            launch(cfg)
        except OutOfResources as exc:
            last_error = exc
            continue
        _working_config[key] = cfg
        return cfg
    assert last_error is not None  # configs is never empty
    raise last_error


def flash_attention(
    q: Tensor, k: Tensor, v: Tensor, causal: bool = False, sm_scale: float | None = None
) -> Tensor:
    """Exact attention with the Triton kernel.

    ``q``: ``(B, H, Tq, D)``; ``k``, ``v``: ``(B, H, Tk, D)``; any strides; ``D`` in 16/32/64/128.
    ``causal`` needs ``Tq <= Tk`` (bottom-right mask). ``sm_scale`` defaults to ``1/sqrt(D)``.
    Returns ``(B, H, Tq, D)`` in ``q``'s dtype.
    """
    b, h, tq, d = q.shape
    if k.dim() != 4 or k.shape[0] != b or k.shape[1] != h or k.shape[3] != d or v.shape != k.shape:
        raise ValueError(f"shapes do not match: q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}")
    if d not in HEAD_DIMS:
        raise ValueError(f"head_dim must be one of {HEAD_DIMS}, got {d}")
    if not (q.dtype == k.dtype == v.dtype):
        raise ValueError(f"dtypes differ: {q.dtype}, {k.dtype}, {v.dtype}")
    if not (q.device == k.device == v.device):
        raise ValueError("q, k and v must be on the same device")
    tk = k.shape[2]
    if causal and tq > tk:
        raise ValueError(f"causal attention needs seq_q <= seq_k, got {tq} > {tk}")
    on_cuda = q.is_cuda and not interpreting()
    if not on_cuda and not interpreting():
        raise RuntimeError("CPU tensors need TRITON_INTERPRET=1 (set before the kernel is defined)")
    scale = 1.0 / math.sqrt(d) if sm_scale is None else sm_scale

    o = torch.empty((b, h, tq, d), dtype=q.dtype, device=q.device)  # (B, H, Tq, D), contiguous

    def launch(cfg: KernelConfig) -> None:
        grid = (triton.cdiv(tq, cfg.block_m), b * h)
        options = {"num_warps": cfg.num_warps, "num_stages": cfg.num_stages} if on_cuda else {}
        flash_attention_kernel[grid](
            q, k, v, o,
            q.stride(0), q.stride(1), q.stride(2), q.stride(3),
            k.stride(0), k.stride(1), k.stride(2), k.stride(3),
            v.stride(0), v.stride(1), v.stride(2), v.stride(3),
            o.stride(0), o.stride(1), o.stride(2), o.stride(3),
            h, tq, tk, scale * LOG2E,
            CAUSAL=causal, BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, HEAD_DIM=d,
            DOT_PRECISION="ieee" if q.dtype == torch.float32 else "tf32",
            **options,
        )

    launch_with_fallback((str(q.device), q.dtype, d, causal), kernel_configs(d, q.dtype, on_cuda), launch)
    return o


def flash_attention_ref(
    q: Tensor, k: Tensor, v: Tensor, causal: bool = False, sm_scale: float | None = None
) -> Tensor:
    """The twin: same signature, computed naively (float32 for half inputs), in ``q``'s dtype."""
    cd = torch.float64 if q.dtype == torch.float64 else torch.float32
    return attention(q, k, v, causal=causal, sm_scale=sm_scale, compute_dtype=cd)
