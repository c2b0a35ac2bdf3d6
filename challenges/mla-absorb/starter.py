"""Challenge mla-absorb: multi-head latent attention, computed naively and with the up-projections
absorbed into the query and output projections.

`inferview grade mla-absorb <this file>` runs the checks.
"""

from __future__ import annotations

from torch import Tensor


def latent_kv(x: Tensor, w_dkv: Tensor, w_kr: Tensor, start: int = 0) -> tuple[Tensor, Tensor]:
    """x (B, T, d_model) at positions start..start+T-1 -> (c_kv (B, T, d_c), k_rope (B, T, d_r))."""
    raise NotImplementedError("latent_kv: c_kv = x @ w_dkv, k_rope = rope(x @ w_kr) at its positions")


def mla_naive(x: Tensor, c_kv: Tensor, k_rope: Tensor, w_qc: Tensor, w_qr: Tensor, w_uk: Tensor,
              w_uv: Tensor, w_o: Tensor) -> Tensor:
    """x (B, Tq, d_model): the newest Tq of the Tk cached tokens -> (B, Tq, d_model)."""
    raise NotImplementedError("mla_naive: up-project keys and values per head, then attend")


def absorb_weights(w_qc: Tensor, w_uk: Tensor, w_uv: Tensor, w_o: Tensor) -> tuple[Tensor, Tensor]:
    """-> (w_q_latent (H, d_model, d_c), w_o_latent (H, d_c, d_model))."""
    raise NotImplementedError("absorb_weights: w_qc[h] @ w_uk[h]^T and w_uv[h] @ w_o[h]")


def mla_absorbed(x: Tensor, c_kv: Tensor, k_rope: Tensor, w_q_latent: Tensor, w_qr: Tensor,
                 w_o_latent: Tensor, qk_head_dim: int) -> Tensor:
    """The same output as mla_naive, attending over the latent cache directly."""
    raise NotImplementedError("mla_absorbed: query in latent space, attend over c_kv, then w_o_latent")
