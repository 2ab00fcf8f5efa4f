"""The multi-RDU model: a lowered tp program's decode step on N modelled chips.

Invariant: `model` runs one simulation over the shared core and fills one `ModelReport` the
same way whatever the mode: the chips' memories (`memory`: one model for sectioned and
per-chip programs — what each chip holds, what is live, every read checked), the split of the
step's time into compute + communication + idle (`report.decompose`, from the mode's
timeline), and the bounds (`bounds`: the seed's lower bound, the physical bound, the compute
bound and the step's bound, the larger of the last two). The simulations differ only in how
they order the same work:

- ``sequential`` (`phase`): a sectioned program's statements one after another;
- ``phase`` (`phase`): phase by phase, each as long as its longest statement plus a barrier;
- ``relay`` (`relay`): per-chip programs under the host's relay, copies made by the host;
- ``dataflow`` (`dataflow`): per-chip programs on direct links, each section as soon as its
  tensors have arrived, each chip and each directed link one resource.

Nothing here lowers a program: a mode refuses a program not at the stage it needs
(`core.require_stage`); ``tp-run --dry-run`` lowers a copy first. An outlined program
(``@decode`` calling ``@layer`` once a layer) is modelled as it stands at the sectioned and
phased stages: every lowered call runs its callee (`calls.Runs`), and the report, timeline,
memory and bounds are those of the flat program tp-inline makes of it, float for float; a
repeated layer's schedule is computed once, not once per call (`phase`).
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp

from tp_dialect.analysis.calls.flat_runs import CallError, Runs
from tp_dialect.machine import Machine
from tp_dialect.runtime.model.bounds import (
    ComputeBound,
    PhysicalBound,
    StepBound,
    allreduces,
    compute_bound,
    lower_bound,
    physical_bound,
)
from tp_dialect.runtime.model.core import (
    MODES,
    NEEDS,
    ModelError,
    chips_of,
    default_mode,
    require_stage,
    stage_of,
)
from tp_dialect.runtime.model.dataflow import simulate_dataflow
from tp_dialect.runtime.model.memory import Memories
from tp_dialect.runtime.model.phase_mode import simulate_sectioned
from tp_dialect.runtime.model.relay_mode import simulate_relay
from tp_dialect.runtime.model.report import LayerFigures, ModelReport, decompose
from tp_dialect.runtime.model.timeline import Timeline
from tp_dialect.signature import entry_function


def model(
    module: ModuleOp, machine: Machine, mode: str | None = None
) -> tuple[ModelReport, Timeline]:
    """The modelled step of ``module`` on ``machine`` in ``mode`` (default: the one its
    stage suggests, `core.default_mode`), as written: its report (time split per step and
    per layer, bytes moved, memory per chip, both bounds) and timeline. Raises ModelError when
    the mode needs another stage, when a chip reads what it does not hold, or when the
    programs wait for each other forever."""
    mode = mode or default_mode(module)
    require_stage(module, mode)
    func = entry_function(module)
    try:
        runs = Runs(func)
    except CallError as err:
        raise ModelError(str(err)) from None
    if mode in ("sequential", "phase"):
        report, timeline, streams = simulate_sectioned(module, machine, mode == "sequential", runs)
    elif mode == "relay":
        report, timeline, streams = simulate_relay(module, machine, runs)
    else:
        report, timeline, streams = simulate_dataflow(module, machine, runs)
    memories = Memories(runs, chips_of(module))
    memories.replay(streams)
    report.memory = memories.report(machine)
    decompose(report, timeline)
    sizes = allreduces(func, runs)
    report.lower_bound = lower_bound(module, machine, sizes)
    report.physical = physical_bound(module, machine, memories.held, sizes, runs)
    report.compute = compute_bound(module, machine, runs)
    return report, timeline


__all__ = [
    "MODES",
    "NEEDS",
    "LayerFigures",
    "ModelError",
    "ModelReport",
    "ComputeBound",
    "PhysicalBound",
    "StepBound",
    "compute_bound",
    "default_mode",
    "lower_bound",
    "model",
    "physical_bound",
    "require_stage",
    "stage_of",
]
