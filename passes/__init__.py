"""tp's passes, one module each; `TP_PASSES` maps each pass name to its class.

tp-split (an unsharded program over N chips, by a plan); the lowering pipeline (docs/design.md
§3): tp-verify, tp-raise-allreduce, tp-fuse, tp-relocate, tp-transfers, tp-phase,
tp-link-points, tp-relay; tp-legalize (chip legality); tp-fold-allreduce (all-reduces spelled as
the seed's folds, tp-raise-allreduce's inverse); tp-narrow-wire (all-reduces carried in bf16,
opt-in); tp-inline (an outlined program's calls inlined: its flat form); and tp-export (per-chip
programs as plain-MLIR segments); tp-to-mpi (per-chip programs as one SPMD function over
xDSL's mpi dialect). Classes are imported on demand, as xDSL's own registry does,
so listing passes stays cheap. On an outlined program (``@decode`` calling ``@layer``) the
lowering passes place the callee's statements once, for every call: docs/outlining.md. Beside
them: `options` (typed options), `rewrites` (rewriter steps the patterns share) and `universe`
(xDSL's ``xdsl.universe`` entry point: the dialect and these passes).
"""

from collections.abc import Callable

from xdsl.passes import ModulePass


def _verify() -> type[ModulePass]:
    from tp_dialect.passes.verify import TpVerify

    return TpVerify


def _raise_allreduce() -> type[ModulePass]:
    from tp_dialect.passes.raise_allreduce import TpRaiseAllreduce

    return TpRaiseAllreduce


def _relocate() -> type[ModulePass]:
    from tp_dialect.passes.relocate import TpRelocate

    return TpRelocate


def _choose_collectives() -> type[ModulePass]:
    from tp_dialect.passes.choose_collectives import TpChooseCollectives

    return TpChooseCollectives


def _fuse_epilogue() -> type[ModulePass]:
    from tp_dialect.passes.epilogue import TpFuseEpilogue

    return TpFuseEpilogue


def _export_shard() -> type[ModulePass]:
    from tp_dialect.passes.export_shard import TpExportShard

    return TpExportShard


def _import_shard() -> type[ModulePass]:
    from tp_dialect.passes.import_shard import TpImportShard

    return TpImportShard


def _narrow_wire() -> type[ModulePass]:
    from tp_dialect.passes.narrow_wire import TpNarrowWire

    return TpNarrowWire


def _transfers() -> type[ModulePass]:
    from tp_dialect.passes.transfers import TpTransfers

    return TpTransfers


def _phase() -> type[ModulePass]:
    from tp_dialect.passes.phase import TpPhase

    return TpPhase


def _link_points() -> type[ModulePass]:
    from tp_dialect.passes.link_points import TpLinkPoints

    return TpLinkPoints


def _relay() -> type[ModulePass]:
    from tp_dialect.passes.relay import TpRelay

    return TpRelay


def _export() -> type[ModulePass]:
    from tp_dialect.passes.export import TpExport

    return TpExport


def _to_mpi() -> type[ModulePass]:
    from tp_dialect.passes.to_mpi import TpToMpi

    return TpToMpi


def _fuse() -> type[ModulePass]:
    from tp_dialect.passes.fuse import TpFuse

    return TpFuse


def _split() -> type[ModulePass]:
    from tp_dialect.passes.split import TpSplit

    return TpSplit


def _inline() -> type[ModulePass]:
    from tp_dialect.passes.inline import TpInline

    return TpInline


def _fold_allreduce() -> type[ModulePass]:
    from tp_dialect.passes.fold_allreduce import TpFoldAllreduce

    return TpFoldAllreduce


def _sequence_parallel() -> type[ModulePass]:
    from tp_dialect.passes.sequence_parallel import TpSequenceParallel

    return TpSequenceParallel


def _legalize() -> type[ModulePass]:
    from tp_dialect.passes.legalize import TpLegalize

    return TpLegalize


TP_PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "tp-split": _split,
    "tp-import-shard": _import_shard,
    "tp-export-shard": _export_shard,
    "tp-verify": _verify,
    "tp-raise-allreduce": _raise_allreduce,
    "tp-fold-allreduce": _fold_allreduce,
    "tp-narrow-wire": _narrow_wire,
    "tp-sequence-parallel": _sequence_parallel,
    "tp-fuse": _fuse,
    "tp-legalize": _legalize,
    "tp-choose-collectives": _choose_collectives,
    "tp-relocate": _relocate,
    "tp-fuse-epilogue": _fuse_epilogue,
    "tp-transfers": _transfers,
    "tp-phase": _phase,
    "tp-link-points": _link_points,
    "tp-relay": _relay,
    "tp-inline": _inline,
    "tp-export": _export,
    "tp-to-mpi": _to_mpi,
}
