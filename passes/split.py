"""tp-split: an unsharded program partitioned over N chips by a tensor-parallel plan.

Invariant: the result computes what the source computes — every value the plan cuts lives as
N chip-local values (chip c's runs of one axis), every partial sum reaches the spine through
one ``tp.allreduce``, every cut host output is stored by ``tp.unshard`` — or the pass refuses,
naming the op, the value and why the cut cannot pass (``cannot-split``, ``plan-mismatch``);
it never writes a program it cannot justify. What it writes is certified where the shard
obligation holds on it (tp-verify's check, run on the output).

Cuts start at the weights the plan names (`tp_dialect.analysis.split.plan`) and move forward through
the ops, one rule each (`tp_dialect.analysis.split.layouts` holds the arithmetic):

- a ``linalg.generic`` whose split operands all read the cut through one loop: along a
  parallel loop the results are cut the same way; along a reduction loop (a contraction from
  zeros: Σ over the cut) each chip's result is a partial sum; whole operands that read the
  loop are cut to match (host values by ``tp.shard``, fresh buffers made on each chip, any
  other by ``tensor.extract_slice``), and reading the loop's index is refused;
- ``arith`` on tensors, ``linalg.fill``, ``tensor.concat`` (not along the cut): elementwise;
- ``tensor.expand_shape`` / ``collapse_shape``: a cut into heads only at head boundaries;
- ``tensor.extract_slice``: a window holding whole runs of every chip;
- ``tensor.insert_slice`` (a KV cache): the window spans the cut axis, so the cache is cut
  the same way (a cache argument is loaded by ``tp.shard``, returned by ``tp.unshard``).

A partial sum read by anything is summed first, so a row-split projection's bias is added
once, after its all-reduce. Anything else reading a cut value is refused.

The walk is `split_walk.Splitter` (the vocabulary rules: `split_vocab`). An outlined program
(an entry whose statements call a function of the module, as ``@decode`` calls ``@layer``) is
split by `split_calls`: each callee once, the calls kept; a program without calls takes exactly
the walk above. ``chips`` is at most `MAX_LOWERED_CHIPS`: the split writes each cut op once per
chip, as the lowering passes write a replicated statement.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.passes import ModulePass

from tp_dialect.analysis.split.plan import PlanError, TpPlan, hf_plan_for, load_plan, shipped_plans
from tp_dialect.attrs import chip_of
from tp_dialect.diagnostics import TpDiagnostic
from tp_dialect.grid import CHIPS_ATTR, MAX_LOWERED_CHIPS
from tp_dialect.names import value_name
from tp_dialect.passes.split_calls import EntrySplitter
from tp_dialect.passes.split_walk import Splitter
from tp_dialect.passes.verify import certify_if_sound
from tp_dialect.reject import TpReject
from tp_dialect.signature import NAME_ATTR, entry_function


@dataclass(frozen=True)
class TpSplit(ModulePass):
    """Partition the unsharded entry function over ``chips`` chips by the tensor-parallel
    ``plan`` (a JSON file, a shipped plan's name: ``qwen3``, ``gpt2``, ``llama``,
    ``gpt2_lm``, or ``hf``: the Hugging Face plan of the family whose embedding the program
    states); the module's ``tp.chips`` becomes ``chips``."""

    name = "tp-split"

    chips: int = 2
    plan: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        split_by_plan(op, self.plan_for(op), self.chips)

    def plan_for(self, op: ModuleOp) -> TpPlan:
        """The plan ``plan=`` names for the module ``op`` (``hf``: by its ports); a one-line
        diagnostic for bad options or a plan that cannot be read."""
        if not 1 <= self.chips <= MAX_LOWERED_CHIPS:
            raise TpDiagnostic(
                None, f"tp-split: chips={self.chips} is not from 1 to {MAX_LOWERED_CHIPS}"
            )
        if not self.plan:
            raise TpDiagnostic(
                None,
                "tp-split: plan= is required (a JSON file, hf, or a shipped plan: "
                f"{', '.join(shipped_plans())})",
            )
        try:
            return hf_plan_for(_port_names(op)) if self.plan == "hf" else load_plan(self.plan)
        except PlanError as err:
            raise TpDiagnostic(None, f"tp-split: {err}") from None


def split_by_plan(module: ModuleOp, plan: TpPlan, chips: int, certify: bool = True) -> None:
    """tp-split of ``module`` over ``chips`` chips by the plan ``plan`` (a plan built in code:
    a generator's, `tp_dialect.frontend.qwen3`); with ``certify``, certified where the
    obligation holds (a generator that leaves certifying to tp-verify skips the check)."""
    _refuse_split_input(module)
    # The walk creates N ops per op and frees none until the end: the cyclic collector's
    # full passes over that growing heap would make the pass quadratic in layers.
    collecting = gc.isenabled()
    gc.disable()
    try:
        entry = entry_function(module)
        if any(isinstance(o, func.CallOp) for o in entry.body.block.ops):
            EntrySplitter(entry, plan, chips).run()
        else:
            Splitter(entry, plan, chips).run()
    finally:
        if collecting:
            gc.enable()
    module.attributes[CHIPS_ATTR] = IntegerAttr(chips, i64)
    # What tp-split writes is a tensor-parallel program of its own: certify it where the
    # shard obligation holds (tp-verify names why where it does not).
    if certify:
        certify_if_sound(module)


def _refuse_split_input(module: ModuleOp) -> None:
    """A program already over chips is not split again."""
    stated = module.attributes.get(CHIPS_ATTR)
    if isinstance(stated, IntegerAttr) and stated.value.data != 1:
        raise TpReject.CANNOT_SPLIT.at(
            module,
            f"the module is already over {stated.value.data} chips: tp-split takes an "
            "unsharded program (tp-gen ... --unsharded)",
        )
    for o in module.walk():
        for v in (*o.results, *o.operands):
            if chip_of(v.type) is not None:
                raise TpReject.CANNOT_SPLIT.at(
                    o,
                    f"%{value_name(v)} already lives on chip {chip_of(v.type)}: tp-split "
                    "takes an unsharded program",
                )


def _port_names(module: ModuleOp) -> list[str]:
    """The names (``tp.name``) the entry function states for its arguments."""
    fn = entry_function(module)
    attrs = fn.arg_attrs.data if fn.arg_attrs else ()
    return [n.data for a in attrs if isinstance(n := a.data.get(NAME_ATTR), StringAttr)]
