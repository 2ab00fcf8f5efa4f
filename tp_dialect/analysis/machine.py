"""The machine description, for the analyses' readers: it lives at IR level
(`tp_dialect.machine`), where the legality shims read it too (sn40l's SRAM is stated once)."""

from __future__ import annotations

from tp_dialect.machine import MACHINES, Machine, MachineError, machine_from

__all__ = ["MACHINES", "Machine", "MachineError", "machine_from"]
