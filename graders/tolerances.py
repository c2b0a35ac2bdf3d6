"""Tolerances from one table.

Per-dtype ``(rtol, atol)`` are the defaults of ``torch.testing.assert_close`` (PyTorch docs,
"torch.testing"). For attention outputs the rule of the flash-attention test suite
(Dao et al., ``tests/test_flash_attn.py``) applies: the candidate's error against an fp64 reference
must be within a small multiple (2x) of the error of a same-precision PyTorch baseline, also
measured against fp64, plus a small absolute slack. Checks apply it with
``inferview.graders.api.expect_attention_close``; the factor is :data:`ATTENTION_FACTOR` and the
slack :func:`attention_slack`.
"""

from __future__ import annotations

import torch

# dtype -> (rtol, atol), as in torch.testing.assert_close
TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
    torch.float32: (1.3e-6, 1e-5),
    torch.float64: (1e-7, 1e-7),
    torch.complex32: (1e-3, 1e-5),
    torch.complex64: (1.3e-6, 1e-5),
    torch.complex128: (1e-7, 1e-7),
}


def for_dtype(dtype: torch.dtype) -> tuple[float, float]:
    """``(rtol, atol)`` for ``dtype``; exact ``(0, 0)`` for integer and bool dtypes."""
    if dtype in TOLERANCES:
        return TOLERANCES[dtype]
    if dtype.is_floating_point:  # fp8 and other narrow formats: as loose as bfloat16
        return (1.25e-1, 1e-5) if dtype.itemsize == 1 else TOLERANCES[torch.bfloat16]
    return (0.0, 0.0)


def max_abs_error(got: torch.Tensor, exact: torch.Tensor) -> float:
    """``max |got - exact|`` computed in fp64 (NaN anywhere gives ``inf``)."""
    diff = (got.detach().double().cpu() - exact.detach().double().cpu()).abs()
    if diff.numel() == 0:
        return 0.0
    if bool(torch.isnan(diff).any()):
        return float("inf")
    return float(diff.max())


def within_baseline_error(
    got: torch.Tensor,
    baseline: torch.Tensor,
    exact: torch.Tensor,
    *,
    factor: float = 2.0,
    slack: float | None = None,
) -> tuple[bool, float, float]:
    """The attention rule: ``err(got) <= factor * err(baseline) + slack``, both against fp64.

    ``got`` is the candidate output, ``baseline`` the same computation done by PyTorch in the
    candidate's precision and ``exact`` the fp64 reference. ``slack`` defaults to the dtype's
    ``atol + rtol * max|exact|`` from :data:`TOLERANCES`: the rounding allowance at the output's
    scale, which keeps the rule meaningful when the baseline happens to be (nearly) exact.
    Returns ``(ok, err_got, err_baseline)``.
    """
    err_got = max_abs_error(got, exact)
    err_base = max_abs_error(baseline, exact)
    if slack is None:
        rtol, atol = for_dtype(got.dtype)
        scale = float(exact.detach().abs().max()) if exact.numel() else 0.0
        slack = atol + rtol * scale
    return err_got <= factor * err_base + slack, err_got, err_base


ATTENTION_FACTOR = 2.0
"""The attention rule's multiple of the baseline's error."""

SCORE_ROUNDING_FACTOR = 8.0
"""Margin on the score-rounding term of :func:`attention_slack`."""


def attention_slack(exact: torch.Tensor, out_dtype: torch.dtype, *,
                    max_score: float | torch.Tensor, max_value: float) -> float | torch.Tensor:
    """The attention rule's one slack: ``atol + rtol * max|exact| + 8 * eps32 * max|s| * max|v|``.

    The first two terms are ``out_dtype``'s rounding allowance at the output's scale (from
    :data:`TOLERANCES`), which keeps the rule meaningful when the baseline happens to be (nearly)
    exact. The last is what rounding the scores to float32 alone can cost: a score ``s`` is known
    to about ``eps * |s|``, and a logit error ``delta`` moves a softmax-weighted average of ``v`` by
    at most ``2 * delta * max|v|`` (:data:`SCORE_ROUNDING_FACTOR` is that 2 times a margin of 4).
    ``max_score`` is the largest ``|q k^T * sm_scale|`` a query row may see (a tensor of one value
    per row gives one slack per row, so a row that must not see a huge score keeps a tight
    allowance) and ``max_value`` is ``max|v|``. For ordinary scores the term is about 1e-5; for
    scores in the hundreds the baseline's own error can be lucky by far more than that, and
    without the term a correct kernel that merely sums the dot products in another order fails
    the 2x rule in about one example in 130.
    """
    rtol, atol = for_dtype(out_dtype)
    scale = float(exact.detach().abs().max()) if exact.numel() else 0.0
    eps = torch.finfo(torch.float32).eps
    return atol + rtol * scale + SCORE_ROUNDING_FACTOR * eps * max_score * max_value
