"""Challenge distillation-loss: Hinton et al.'s soft-target loss with temperature.

Fill in the function. `inferview grade distillation-loss <this file>` runs the checks.
"""

from __future__ import annotations

import torch  # noqa: F401  (you will need it)
from torch import Tensor


def distillation_loss(student_logits: Tensor, teacher_logits: Tensor, labels: Tensor,
                      temperature: float, alpha: float) -> Tensor:
    """alpha * T^2 * KL(p_T || q_T) + (1 - alpha) * CE, batchmean over rows whose label != -100."""
    raise NotImplementedError("distillation_loss: soft KL at temperature T plus hard cross-entropy")
