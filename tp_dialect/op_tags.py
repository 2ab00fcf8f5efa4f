"""Op classes and the ``doc`` tags that name them: one definition for every frontend and shim.

Every op of a program maps to one `OpClass` (`tp_dialect.shims.classify`). A ``linalg.generic``
says what it is part of by its ``doc`` attribute: frontends write an `OpTag` (never a bare
string) and the shims read it back with `tag_of`, so a tag a frontend writes is a tag every
shim knows, with the class it belongs to (`OpTag.op_class`). An untagged generic, or one
whose ``doc`` is no `OpTag` (hand-written IR), is classed by its structure.
"""

from __future__ import annotations

from enum import Enum

from xdsl.dialects.builtin import StringAttr
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Operation


class OpClass(Enum):
    """What kind of work an op is, as a chip's compiler sees it."""

    MATMUL = "matmul"
    ELEMENTWISE = "elementwise"
    REDUCTION = "reduction"
    NORM = "norm"
    SOFTMAX = "softmax"
    ROPE = "rope"
    CACHE_SCATTER = "cache-scatter"  # an in-place write into a cache
    GATHER = "gather"  # a slice read out of a tensor
    RESHAPE = "reshape"
    CONCAT = "concat"
    FILL = "fill"
    LOAD = "load"  # a chip's slice of a host tensor (tp.shard)
    STORE = "store"  # the host's store of chip tensors (tp.unshard)
    COLLECTIVE = "collective"  # an all-reduce, a maxloc, a transfer, a link point, a host copy
    SCALAR = "scalar"
    CONSTANT = "constant"
    OTHER = "other"  # an op tp does not know: no chip is assumed to have a kernel for it


class OpTag(Enum):
    """A ``doc`` tag a frontend writes on a ``linalg.generic`` (its value is the string in
    the IR), each with the `OpClass` the shims give every generic it tags."""

    RMS_NORM = "rms_norm"
    LAYER_NORM = "layer_norm"
    SOFTMAX = "softmax"
    ROPE = "rope"
    SILU = "silu"
    GELU = "gelu"
    EMBEDDING = "embedding"
    POSITION_EMBEDDING = "position_embedding"
    ARGMAX = "argmax"

    @property
    def op_class(self) -> OpClass:
        """The class of every generic this tag is on (a norm's sums of squares are a norm's
        work, not a matmul's, though one is a contraction)."""
        match self:
            case OpTag.RMS_NORM | OpTag.LAYER_NORM:
                return OpClass.NORM
            case OpTag.SOFTMAX:
                return OpClass.SOFTMAX
            case OpTag.ROPE:
                return OpClass.ROPE
            case OpTag.SILU | OpTag.GELU:
                return OpClass.ELEMENTWISE  # an activation: one map over its operands
            case OpTag.EMBEDDING | OpTag.POSITION_EMBEDDING:
                return OpClass.GATHER  # rows read out of a table
            case OpTag.ARGMAX:
                return OpClass.REDUCTION

    def attr_text(self) -> str:
        """The tag as it is spelled in a generic's attribute dictionary."""
        return f'doc = "{self.value}"'


_BY_NAME = {tag.value: tag for tag in OpTag}


def tag_of(op: Operation) -> OpTag | None:
    """The `OpTag` a ``linalg.generic``'s ``doc`` names (``None`` for any other op, an
    untagged generic or a ``doc`` that is no tag)."""
    if not isinstance(op, linalg.GenericOp) or not isinstance(op.doc, StringAttr):
        return None
    return _BY_NAME.get(op.doc.data)
