"""Mistake: applies the temperature to the teacher only; the student's distribution in the soft term is unsoftened."""


from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor


def distillation_loss(student_logits: Tensor, teacher_logits: Tensor, labels: Tensor,
                      temperature: float, alpha: float) -> Tensor:
    keep = labels != -100
    if not bool(keep.any()):
        return torch.zeros((), dtype=torch.float32, device=student_logits.device)
    s = student_logits[keep].float()
    t = teacher_logits[keep].float()
    y = labels[keep]
    log_q = F.log_softmax(s, dim=-1)
    log_p = F.log_softmax(t / temperature, dim=-1)
    soft = F.kl_div(log_q, log_p, reduction="batchmean", log_target=True)
    hard = F.cross_entropy(s, y)
    return alpha * temperature**2 * soft + (1 - alpha) * hard
