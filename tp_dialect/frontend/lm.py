"""The pieces of a whole model's step program that are not a layer: its ports' roles, the
token embedding (a gather), the step's shape, and the LM head with its greedy argmax, written
once for every family in the IR forms the sharding pass and the certificate rely on
(issue 24's spec, section 1).

- **Embedding**: ``linalg.generic {doc = "embedding"}`` over ``[B, S, H]`` reading the ids
  (map ``(b, s, h) -> (b, s)``), its body an ``arith.index_cast`` of the id, ``linalg.index 2``
  for the column and a ``tensor.extract`` of the captured table (widened by ``arith.extf``).
- **Head**: the last position's row, then (after the family's final norm) the logits ``[B, V]``
  as a contraction with the head weight ``[V, H]`` from zeros.
- **Argmax**: one ``linalg.generic {doc = "argmax"}`` over ``[B, V]`` (``parallel``,
  ``reduction``) from fills of ``-inf`` and ``0``: the first (smallest) index of the maximum,
  as ``torch.argmax`` picks (`tp_dialect.linalg_kinds.argmax` recognises it).
"""

from __future__ import annotations

from dataclasses import dataclass

from tp_dialect.frontend.blocks import OUT_IN, DecodeFunction, GenError, linear
from tp_dialect.frontend.emitter import Emitter, TensorT, Value, affine_map
from tp_dialect.frontend.family import Family
from tp_dialect.op_tags import OpTag

STEPS = ("prefill", "decode")

# A whole model's ports: the ids and the start position are per-step inputs; every layer's
# key and value caches [B, kv_heads, P, head_dim] grow along axis 2.
LM = Family(
    name="lm",
    inputs=("input_ids", "position"),
    caches=("past_key.", "past_value."),
    cache_axis=2,
)


@dataclass(frozen=True)
class Step:
    """Which step program to write: ``prefill`` (a prompt of ``tokens`` ids at positions
    ``0 ..``) or ``decode`` (one id), for ``batch`` rows, caches of ``max_positions``; with
    ``logits``, the last position's logits are a result too."""

    kind: str = "prefill"
    tokens: int = 1
    batch: int = 1
    max_positions: int = 16
    logits: bool = False

    def check(self) -> None:
        """Nothing when the step is writable; else GenError naming what is wrong."""
        if self.kind not in STEPS:
            raise GenError(f"step must be one of {', '.join(STEPS)}, got '{self.kind}'")
        for name in ("tokens", "batch", "max_positions"):
            if getattr(self, name) <= 0:
                raise GenError(f"{name} must be positive, got {getattr(self, name)}")
        if self.kind == "decode" and self.tokens != 1:
            raise GenError(f"a decode step reads one token, not {self.tokens}")
        if self.tokens > self.max_positions:
            raise GenError(
                f"a prompt of {self.tokens} tokens does not fit a cache of "
                f"{self.max_positions} positions"
            )


def _widen(value: Value, name: str) -> tuple[list[str], str]:
    """Body lines widening ``%name`` (an element of ``value``) to f32, and what to read."""
    vt = value.type
    assert isinstance(vt, TensorT)
    if vt.dtype == "f32":
        return [], f"%{name}"
    return [f"%{name}32 = arith.extf %{name} : {vt.dtype} to f32"], f"%{name}32"


def embedding(e: Emitter, hint: str, ids: Value, table: Value) -> Value:
    """Rows ``table[ids[b, s]]`` as ``[B, S, H]`` f32: the ``doc = "embedding"`` gather."""
    it, tt = ids.type, table.type
    assert isinstance(it, TensorT) and isinstance(tt, TensorT)
    b, s = it.shape
    h = tt.shape[1]
    ext, v = _widen(table, "v")
    return e.generic(
        hint,
        [(ids, "bs")],
        (TensorT((b, s, h)), "bsh"),
        "bsh",
        "",
        [
            "%row = arith.index_cast %id : i64 to index",
            "%col = linalg.index 2 : index",
            f"%v = tensor.extract {table}[%row, %col] : {tt}",
            *ext,
            f"linalg.yield {v} : f32",
        ],
        ["id", "o"],
        doc=OpTag.EMBEDDING,
    )


def position_embedding(e: Emitter, hint: str, ids: Value, pos: Value, table: Value) -> Value:
    """GPT-2's learned positions: row ``position + s`` of ``table`` for every ``[b, s]`` of
    ``ids`` (whose values it does not read: they give the iteration its shape)."""
    it, tt = ids.type, table.type
    assert isinstance(it, TensorT) and isinstance(tt, TensorT)
    ext, v = _widen(table, "v")
    return e.generic(
        hint,
        [(ids, "bs")],
        (TensorT((*it.shape, tt.shape[1])), "bsh"),
        "bsh",
        "",
        [
            "%s = linalg.index 1 : index",
            f"%p0 = arith.index_cast {pos} : i64 to index",
            "%row = arith.addi %p0, %s : index",
            "%col = linalg.index 2 : index",
            f"%v = tensor.extract {table}[%row, %col] : {tt}",
            *ext,
            f"linalg.yield {v} : f32",
        ],
        ["id", "o"],
        doc=OpTag.POSITION_EMBEDDING,
    )


def head_logits(e: Emitter, x: Value, weight: Value) -> Value:
    """The logits ``[B, V]`` f32 of the last position's normed state ``x [B, H]``: a
    contraction with the head weight ``[V, H]`` from zeros."""
    xt, wt = x.type, weight.type
    assert isinstance(xt, TensorT) and isinstance(wt, TensorT)
    return linear(e, "logits", x, weight, TensorT((xt.shape[0], wt.shape[0])), OUT_IN)


def argmax(e: Emitter, logits: Value) -> Value:
    """The greedy ids ``[B]`` i64 of ``logits [B, V]``: the ``doc = "argmax"`` generic, the
    first index of each row's maximum."""
    lt = logits.type
    assert isinstance(lt, TensorT)
    b = lt.shape[0]
    max_t, ids_t = TensorT((b,)), TensorT((b,), "i64")
    m0 = e.filled("neg_infs", max_t, e.scalar("neg_inf", float("-inf")))
    i0 = e.filled("zero_ids", ids_t, e.scalar("zero_i64", 0, "i64"))
    maps = ", ".join(affine_map(x, "bv") for x in ("bv", "b", "b"))
    mx, ids = e.fresh("max_logit"), e.fresh("next_ids")
    e.line(
        f"{mx}, {ids} = linalg.generic {{{OpTag.ARGMAX.attr_text()}, indexing_maps = [{maps}], "
        f'iterator_types = ["parallel", "reduction"]}} ins({logits} : {lt}) '
        f"outs({m0}, {i0} : {max_t}, {ids_t}) {{"
    )
    e.lines.append(f"{e.indent}^bb0(%v: f32, %m: f32, %i: i64):")
    for text in (
        "%j = linalg.index 1 : index",
        "%g = arith.index_cast %j : index to i64",
        "%gt = arith.cmpf ogt, %v, %m : f32",
        "%nm = arith.select %gt, %v, %m : f32",
        "%ni = arith.select %gt, %g, %i : i64",
        "linalg.yield %nm, %ni : f32, i64",
    ):
        e.line(f"  {text}")
    e.line(f"}} -> {max_t}, {ids_t}")
    return Value(ids, ids_t)


def finish_step(
    fn: DecodeFunction,
    e: Emitter,
    normed: Value,
    head: Value,
    step: Step,
    presents: list[tuple[Value, str]],
    model: str,
    layers: int,
    attr: str,
    layer: str,
) -> str:
    """A whole-model step's end, alike for every family: the last position's normed state
    times ``head`` as the logits, the greedy ``next_ids``, the logits when the step asks,
    then the ``presents`` (the caches); the module's text with its header comment."""
    logits = head_logits(e, normed, head)
    fn.results.append((argmax(e, logits), "next_ids"))
    if step.logits:
        fn.results.append((logits, "logits"))
    fn.results += presents
    return fn.module(
        f"// {model} {step.kind} step: {layers} layer(s), {step.tokens} token(s), unsharded, "
        f"outlined (@{step.kind} calls @layer once a layer). Generated by tp-gen.",
        1,
        attr,
        layer,
    )
