"""The ``tp`` dialect: its ops and attributes as one xDSL Dialect."""

from xdsl.ir import Dialect

from tp_dialect.attrs import ChipAttr, SliceAttr
from tp_dialect.collectives import (
    AllGatherAlgorithmAttr,
    AllReduceAlgorithmAttr,
    MaxLocAlgorithmAttr,
    ReduceScatterAlgorithmAttr,
)
from tp_dialect.ops import (
    AllGatherOp,
    AllReduceOp,
    BarrierOp,
    MaxLocOp,
    SectionOp,
    ShardOp,
    TransferOp,
    UnshardOp,
    YieldOp,
)
from tp_dialect.program_ops import (
    ChipProgramOp,
    CopyOp,
    FinishOp,
    LinkOp,
    RelayOp,
    RelayRepeatOp,
    RunToOp,
)
from tp_dialect.scatter_ops import ReduceScatterOp
from tp_dialect.xdsl_compat import accept_parenthesized_results

accept_parenthesized_results()  # tp's argmax has two results: read back what is printed

TP = Dialect(
    "tp",
    [
        ShardOp,
        UnshardOp,
        AllReduceOp,
        MaxLocOp,
        ReduceScatterOp,
        AllGatherOp,
        SectionOp,
        YieldOp,
        TransferOp,
        BarrierOp,
        ChipProgramOp,
        FinishOp,
        LinkOp,
        RelayOp,
        RelayRepeatOp,
        RunToOp,
        CopyOp,
    ],
    [
        ChipAttr,
        SliceAttr,
        AllReduceAlgorithmAttr,
        MaxLocAlgorithmAttr,
        ReduceScatterAlgorithmAttr,
        AllGatherAlgorithmAttr,
    ],
)
