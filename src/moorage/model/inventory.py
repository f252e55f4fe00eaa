"""Inventory: how much of one resource class a provider has, and on what terms."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Inventory:
    """One resource class of one provider."""

    total: int
    reserved: int
    min_unit: int
    max_unit: int
    step_size: int
    allocation_ratio: float

    @property
    def capacity(self) -> int:
        """What may be allocated in all: (total - reserved) * allocation_ratio."""
        return int((self.total - self.reserved) * self.allocation_ratio)

    def fields(self) -> dict[str, int | float]:
        """The six fields, as the API and the inventories table name them."""
        return {
            "total": self.total,
            "reserved": self.reserved,
            "min_unit": self.min_unit,
            "max_unit": self.max_unit,
            "step_size": self.step_size,
            "allocation_ratio": self.allocation_ratio,
        }

    def admits(self, amount: int) -> bool:
        """Whether one allocation of ``amount`` respects min_unit, max_unit and step_size."""
        return (
            self.min_unit <= amount <= self.max_unit and amount % self.step_size == 0
        )

    @classmethod
    def of(cls, total: int, *, reserved: int = 0, min_unit: int = 1,
           max_unit: int | None = None, step_size: int = 1,
           allocation_ratio: float = 1.0) -> Inventory:
        """An inventory with the usual defaults: one unit at a time, up to the total."""
        return cls(total, reserved, min_unit, total if max_unit is None else max_unit,
                   step_size, allocation_ratio)
