"""The ``Quantity`` a numeric drill asks for: a name, a unit, a formula in words and the reference
function that computes it. The registry of every quantity is ``inferview.reference.formulas``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

Params = Mapping[str, Any]


@dataclass(frozen=True)
class Quantity:
    """A named quantity a numeric drill can ask for."""

    name: str
    """Registry key, e.g. ``kv_cache_bytes``."""
    unit: str
    """Unit of the value (one of ``NumericQuestion.unit``'s literals)."""
    formula: str
    """The formula in words/symbols, shown with model answers."""
    fn: Callable[[dict[str, Any] | None, Params], float]
    """Computes the value from the model config and the parameters."""
    needs_model: bool = True
    """Whether the drill must range over ``model``."""
    required: tuple[str, ...] = ()
    """Parameters the drill must provide."""
    defaults: dict[str, Any] = field(default_factory=dict)
    """Values used for parameters the drill does not provide."""

    def compute(self, config: Mapping[str, Any] | None, params: Params) -> float:
        """The value for ``config`` and ``params`` (defaults filled in)."""
        missing = [p for p in self.required if p not in params]
        if missing:
            raise ValueError(f"quantity {self.name!r} needs parameter(s) {', '.join(missing)}")
        if self.needs_model and config is None:
            raise ValueError(f"quantity {self.name!r} needs a model")
        full = {**self.defaults, **params}
        return self.fn(dict(config) if config is not None else None, full)

    def params_used(self) -> set[str]:
        """Every parameter name the quantity reads."""
        return set(self.required) | set(self.defaults)
