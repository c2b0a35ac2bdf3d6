"""Knowledge-distillation loss reference.

Source: Hinton, Vinyals, Dean 2015, "Distilling the Knowledge in a Neural Network". The student
matches the teacher's temperature-softened distribution ``p_T = softmax(teacher / T)`` by minimising
``KL(p_T || q_T)`` with ``q_T = softmax(student / T)``; the term is multiplied by ``T^2`` because the
gradient of the soft term with respect to the student's logits scales as ``1 / T^2`` (for large
``T`` it tends to ``(z - v) / (N T^2)`` with ``N`` the vocabulary size), so the factor keeps the
soft and hard terms' relative weight unchanged when ``T`` is tuned. The hard term is the usual
cross-entropy on the true labels at ``T = 1``:

    loss = alpha * T^2 * KL(p_T || q_T) + (1 - alpha) * CE(student, labels)

Temperature is applied to *both* teacher and student. The KL is the forward one (teacher first), as
in Hinton et al. and ``torch.nn.functional.kl_div(log_q, p)``; MiniLLM (Gu et al. 2024) argues for the
reverse KL in generative models — a different objective.

Conventions: logits are ``(rows, vocab)`` (or ``(batch, seq, vocab)`` for the sequence variant);
rows whose label is ``ignore_index`` (padding, prompt tokens) are left out of *both* terms, and both
terms are averaged over the remaining rows ("batchmean": sum over the vocabulary, mean over rows).
With no remaining row the loss is 0. Everything is computed in float32 through ``log_softmax``, so
large logits do not overflow.
"""

from __future__ import annotations

import torch
from torch import Tensor


def soft_targets(teacher_logits: Tensor, temperature: float) -> Tensor:
    """``softmax(teacher / T)`` in float32: the soft targets (``(..., vocab)``)."""
    return torch.softmax(teacher_logits.float() / temperature, dim=-1)


def kl_per_row(student_logits: Tensor, teacher_logits: Tensor, temperature: float) -> Tensor:
    """``KL(p_T || q_T)`` for each row: ``sum_v p_T[v] * (log p_T[v] - log q_T[v])``, ``(rows,)``.

    Terms with ``p_T[v] == 0`` contribute 0 (the ``0 log 0 = 0`` convention)."""
    log_p = torch.log_softmax(teacher_logits.float() / temperature, dim=-1)  # (R, V)
    log_q = torch.log_softmax(student_logits.float() / temperature, dim=-1)  # (R, V)
    p = log_p.exp()
    terms = torch.where(p > 0, p * (log_p - log_q), torch.zeros_like(p))
    return terms.sum(dim=-1)


def distillation_loss(
    student_logits: Tensor, teacher_logits: Tensor, labels: Tensor, temperature: float,
    alpha: float, ignore_index: int = -100,
) -> Tensor:
    """Hinton et al. 2015 distillation loss (scalar float32).

    ``student_logits``, ``teacher_logits``: ``(rows, vocab)``; ``labels``: int64 ``(rows,)``.
    ``alpha * T^2 * mean_rows KL(p_T || q_T) + (1 - alpha) * mean_rows CE(student, label)`` over the
    rows whose label is not ``ignore_index``.
    """
    keep = labels != ignore_index  # (R,)
    n = int(keep.sum())
    if n == 0:
        return student_logits.float().sum() * 0.0  # keeps the graph, value 0
    s, t, y = student_logits[keep].float(), teacher_logits[keep].float(), labels[keep]
    soft = kl_per_row(s, t, temperature).sum() / n  # batchmean KL at temperature T
    log_q1 = torch.log_softmax(s, dim=-1)  # (n, V) hard term at T = 1
    hard = -log_q1.gather(-1, y.long().unsqueeze(-1)).squeeze(-1).sum() / n
    return alpha * temperature**2 * soft + (1.0 - alpha) * hard


def distillation_loss_seq(
    student_logits: Tensor, teacher_logits: Tensor, labels: Tensor, temperature: float,
    alpha: float, ignore_index: int = -100, mask: Tensor | None = None,
) -> Tensor:
    """Token-level distillation over sequences: ``(batch, seq, vocab)`` logits, ``(batch, seq)``
    labels, every non-ignored position one row of :func:`distillation_loss`.

    ``mask`` (bool ``(batch, seq)``, optional) further drops positions where it is False (e.g.
    padding whose label is a real token id). This is the per-token objective used to distil
    language models; Kim & Rush 2016's *sequence-level* KD instead trains on teacher-generated
    sequences with plain cross-entropy.
    """
    b, s, v = student_logits.shape
    lab = labels.reshape(b * s)
    if mask is not None:
        lab = torch.where(mask.reshape(b * s), lab, torch.full_like(lab, ignore_index))
    return distillation_loss(student_logits.reshape(b * s, v), teacher_logits.reshape(b * s, v),
                             lab, temperature, alpha, ignore_index)
