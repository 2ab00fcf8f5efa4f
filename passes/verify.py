"""tp-verify: the shard obligation.

Invariant: data derived from a chip's own tensors reaches the replicated spine only through
an all-reduce over EVERY chip (``tp.allreduce``, or the seed's left fold of adds over one
partial per chip in chip order); no statement mixes two chips' tensors; a host output
(``tp.unshard``) is only returned. On success the module is stamped with a certificate bound
to a digest of what was checked; a violation is a diagnostic naming the op, the leaking value
and its chip, with its `TpReject` reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from tp_dialect.analysis.folds import Fold, find_folds
from tp_dialect.analysis.manifest import value_name
from tp_dialect.analysis.touch import is_constant
from tp_dialect.attrs import chip_of
from tp_dialect.certificate import stamp
from tp_dialect.grid import stated_chips
from tp_dialect.ops import AllReduceOp, BarrierOp, SectionOp, TransferOp, UnshardOp, YieldOp
from tp_dialect.reject import TpReject

_STRUCTURAL = (FuncOp, ReturnOp, SectionOp, YieldOp, TransferOp, BarrierOp, ModuleOp)


def _statement_ops(module: ModuleOp) -> list[Operation]:
    """Ops at statement level: in a function body or a section body (not inside bodies of
    linalg.generic and the like, whose scalars carry no chips)."""
    out = []
    for op in module.walk():
        parent = op.parent_op()
        if isinstance(parent, FuncOp | SectionOp) and not isinstance(op, _STRUCTURAL):
            if not is_constant(op):
                out.append(op)
    return out


def _name(v: SSAValue) -> str:
    return f"%{value_name(v)}"


def _fold_error(fold: Fold, n: int) -> tuple[TpReject, str]:
    chips = fold.chips
    spine = [p for p in fold.partials if chip_of(p.type) is None]
    if spine:
        return TpReject.FOLD_MIXES_SPINE, (
            f"fold of adds into {_name(fold.result)} adds spine value {_name(spine[0])} to "
            "chip partials: an all-reduce sums one partial per chip and nothing else"
        )
    missing = sorted(set(range(n)) - set(chips))
    repeated = sorted({c for c in chips if chips.count(c) > 1})
    faults = [f"repeats chip {', '.join(map(str, repeated))}"] if repeated else []
    faults += [f"misses chip {', '.join(map(str, missing))}"] if missing else []
    why = " and ".join(faults) or f"is out of chip order {list(chips)}"
    return TpReject.FOLD_NOT_ALLREDUCE, (
        f"fold of adds into {_name(fold.result)} over partials on chips {list(chips)} {why}: "
        f"an all-reduce needs one partial per chip 0..{n - 1}, in chip order"
    )


def _only_returned(value: SSAValue) -> bool:
    for use in value.uses:
        user = use.operation
        if isinstance(user, ReturnOp):
            continue
        if isinstance(user, YieldOp) and isinstance(section := user.parent_op(), SectionOp):
            if _only_returned(section.outs[use.index]):
                continue
        return False
    return True


def check_obligation(module: ModuleOp) -> None:
    """Raise the first violation of the shard obligation in ``module`` as a TpDiagnostic."""
    n = stated_chips(module) or 1
    fold_of: dict[Operation, Fold] = {}
    for fold in find_folds(module):
        for op in fold.ops:
            fold_of[op] = fold
    for op in _statement_ops(module):
        if isinstance(op, AllReduceOp):
            continue  # its verifier holds it to one partial per chip, each on its chip
        if isinstance(op, UnshardOp):
            if not _only_returned(op.result):
                raise TpReject.HOST_STORE_USED.at(
                    op,
                    f"'tp.unshard' result {_name(op.result)} is a host output: only the "
                    "function's return may use it, computing on it would move chip data to "
                    "the spine without an all-reduce",
                )
            continue
        if (fold := fold_of.get(op)) is not None:
            if fold.is_allreduce(n):
                continue
            reason, message = _fold_error(fold, n)
            raise reason.at(fold.ops[-1], message)
        _check_statement(op)
    for section in (op for op in module.walk() if isinstance(op, SectionOp)):
        _check_section(section)


def _check_statement(op: Operation) -> None:
    reads = [(v, c) for v in op.operands if (c := chip_of(v.type)) is not None]
    binds = [(v, c) for v in op.results if (c := chip_of(v.type)) is not None]
    chips = sorted({c for _, c in reads + binds})
    if len(chips) > 1:
        (va, a), (vb, b) = next(
            (x, y) for x in reads + binds for y in reads + binds if x[1] != y[1]
        )
        raise TpReject.MIXED_CHIPS.at(
            op,
            f"'{op.name}' mixes {_name(va)} on chip {a} with {_name(vb)} on chip {b}: a "
            "statement works on one chip's tensors (and the spine)",
        )
    spine_out = [
        r for r in op.results if isinstance(r.type, TensorType) and chip_of(r.type) is None
    ]
    if reads and spine_out:
        value, chip = reads[0]
        raise TpReject.LEAK_TO_SPINE.at(
            op,
            f"'{op.name}' computes spine value {_name(spine_out[0])} from {_name(value)} "
            f"on chip {chip}: chip data reaches the spine only through an all-reduce over "
            "every chip",
        )


def _check_section(section: SectionOp) -> None:
    for op in section.body.walk():
        for v in (*op.results, *op.operands):
            if (c := chip_of(v.type)) is not None and c not in section.chip_list:
                if isinstance(op, AllReduceOp | UnshardOp):
                    continue
                raise TpReject.SECTION_CHIP.at(
                    op,
                    f"{_name(v)} is on chip {c}, but its section runs on chips "
                    f"{list(section.chip_list)}",
                )


@dataclass(frozen=True)
class TpVerify(ModulePass):
    """Check the shard obligation and stamp the module with a certificate of it.

    Data derived from a chip's own tensors reaches the spine only through an all-reduce over
    every chip; no statement mixes two chips' tensors; host outputs are only returned.
    """

    name = "tp-verify"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_obligation(op)
        stamp(op)
