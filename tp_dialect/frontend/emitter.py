"""A small text emitter for the IR a generator writes: typed SSA values and the handful of
upstream op shapes (linalg.generic contractions, reductions and maps) a transformer needs.

Emitting text keeps generation linear and fast for 36-layer programs; the result is
ordinary MLIR that any xDSL tool parses and verifies.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field

from tp_dialect.attrs import ChipAttr, SliceAttr
from tp_dialect.op_tags import OpTag


@dataclass(frozen=True)
class TensorT:
    """A tensor type: shape, element type and owning chip (None: the spine)."""

    shape: tuple[int, ...]
    dtype: str = "f32"
    chip: int | None = None

    def __str__(self) -> str:
        dims = "".join(f"{d}x" for d in self.shape)
        enc = f", {chip_text(self.chip)}" if self.chip is not None else ""
        return f"tensor<{dims}{self.dtype}{enc}>"

    def reshaped(self, shape: Sequence[int]) -> TensorT:
        return TensorT(tuple(shape), self.dtype, self.chip)


@dataclass(frozen=True)
class Value:
    """An SSA value the emitter has bound: its name and type."""

    name: str
    type: TensorT | str

    def __str__(self) -> str:
        return self.name


def _dims(n: int) -> list[str]:
    return [f"d{i}" for i in range(n)]


def affine_map(letters: str, order: str) -> str:
    """affine_map over the iteration letters ``order`` projecting onto ``letters``."""
    dims = _dims(len(order))
    pos = {c: dims[i] for i, c in enumerate(order)}
    return f"affine_map<({', '.join(dims)}) -> ({', '.join(pos[c] for c in letters)})>"


@dataclass
class Emitter:
    """Collects lines of one function body, naming values uniquely."""

    lines: list[str] = field(default_factory=list[str])
    indent: str = "    "
    _used: dict[str, int] = field(default_factory=dict[str, int])
    # Constants and filled tensors are emitted once and reused: the body is one
    # straight-line block, so the first definition dominates every later use.
    _scalars: dict[tuple[str, str], Value] = field(default_factory=dict[tuple[str, str], Value])
    _fills: dict[tuple[str, str], Value] = field(default_factory=dict[tuple[str, str], Value])

    def fresh(self, hint: str) -> str:
        n = self._used.get(hint, 0)
        self._used[hint] = n + 1
        return f"%{hint}" if n == 0 else f"%{hint}_{n}"

    def line(self, text: str) -> None:
        self.lines.append(self.indent + text)

    def comment(self, text: str) -> None:
        self.line(f"// {text}")

    def bind(self, hint: str, type_: TensorT | str, rhs: str) -> Value:
        name = self.fresh(hint)
        self.line(f"{name} = {rhs}")
        return Value(name, type_)

    # -- scalars and constants ---------------------------------------------------------

    def scalar(self, hint: str, value: float, dtype: str = "f32") -> Value:
        """A scalar constant (the first one of this value and type; ``hint`` names it)."""
        text = float_literal(value) if dtype.startswith(("f", "bf")) else str(int(value))
        key = (text, dtype)
        if key not in self._scalars:
            self._scalars[key] = self.bind(hint, dtype, f"arith.constant {text} : {dtype}")
        return self._scalars[key]

    def dense(self, hint: str, values: Sequence[float], t: TensorT) -> Value:
        body = ", ".join(float_literal(v) for v in values)
        return self.bind(hint, t, f"arith.constant dense<[{body}]> : {t}")

    def empty(self, t: TensorT) -> Value:
        """A ``tensor.empty`` of type ``t``: shared, since an init a body never reads only
        gives its result's shape."""
        key = (str(t), "empty")
        if key not in self._fills:
            self._fills[key] = self.bind(chip_hint("empty", t.chip), t, f"tensor.empty() : {t}")
        return self._fills[key]

    def filled(self, hint: str, t: TensorT, fill: Value) -> Value:
        """A tensor of type ``t`` filled with ``fill`` (one per type and value)."""
        key = (str(t), fill.name)
        if key not in self._fills:
            empty = self.empty(t)
            self._fills[key] = self.bind(
                hint, t, f"linalg.fill ins({fill} : {fill.type}) outs({empty} : {t}) -> {t}"
            )
        return self._fills[key]

    # -- linalg.generic shapes ---------------------------------------------------------

    def generic(
        self,
        hint: str,
        ins: Sequence[tuple[Value, str]],
        out: tuple[TensorT, str] | tuple[Value, str],
        order: str,
        reduced: str,
        body: Sequence[str],
        arg_names: Sequence[str],
        doc: OpTag | None = None,
    ) -> Value:
        """``linalg.generic`` over iteration letters ``order`` (``reduced`` ones reduce).
        ``doc`` tags what it is part of (an `OpTag`: the shims class it by the tag).

        ``ins``/``out`` pair a value (or, for out, a fresh empty of that type) with the
        letters indexing it; ``body`` is the region's ops, ``arg_names`` its block args.
        """
        init, out_letters = out
        if isinstance(init, TensorT):
            init = self.empty(init)
        out_t = init.type
        assert isinstance(out_t, TensorT)
        maps = [affine_map(letters, order) for _, letters in ins] + [affine_map(out_letters, order)]
        iters = ", ".join('"reduction"' if c in reduced else '"parallel"' for c in order)
        in_vals = ", ".join(str(v) for v, _ in ins)
        in_types = ", ".join(str(v.type) for v, _ in ins)
        name = self.fresh(hint)
        self.line(
            f"{name} = linalg.generic {{{_doc(doc)}indexing_maps = [{', '.join(maps)}], "
            f"iterator_types = [{iters}]}} ins({in_vals} : {in_types}) "
            f"outs({init} : {out_t}) {{"
        )
        elem = [_elem(v.type) for v, _ in ins] + [out_t.dtype]
        args = ", ".join(f"%{a}: {t}" for a, t in zip(arg_names, elem, strict=True))
        self.lines.append(f"{self.indent}^bb0({args}):")
        for text in body:
            self.line(f"  {text}")
        self.line(f"}} -> {out_t}")
        return Value(name, out_t)

    def einsum(self, hint: str, spec: str, a: Value, b: Value, out_t: TensorT) -> Value:
        """A contraction ``spec`` (e.g. ``"bk,ok->bo"``) accumulating in f32 from zero."""
        lhs, out_letters = spec.split("->")
        la, lb = lhs.split(",")
        order = out_letters + "".join(sorted(set(la + lb) - set(out_letters)))
        reduced = "".join(c for c in order if c not in out_letters)
        acc = self.filled(chip_hint("zeros", out_t.chip), out_t, self.scalar("zero", 0.0))
        body = []
        xa, xb = "%a", "%b"
        for arg, t in (("a", a.type), ("b", b.type)):
            if _elem(t) != "f32":
                body.append(f"%{arg}32 = arith.extf %{arg} : {_elem(t)} to f32")
        if _elem(a.type) != "f32":
            xa = "%a32"
        if _elem(b.type) != "f32":
            xb = "%b32"
        body += [
            f"%m = arith.mulf {xa}, {xb} : f32",
            "%s = arith.addf %acc, %m : f32",
            "linalg.yield %s : f32",
        ]
        return self.generic(
            hint,
            [(a, la), (b, lb)],
            (acc, out_letters),
            order,
            reduced,
            body,
            ["a", "b", "acc"],
        )


def _doc(doc: OpTag | None) -> str:
    return "" if doc is None else f"{doc.attr_text()}, "


@functools.cache
def chip_text(chip: int) -> str:
    """``#tp.chip<chip>`` as the attribute prints itself (once per chip: types repeat)."""
    return str(ChipAttr(chip))


def slice_text(axis: int, ranges: Sequence[tuple[int, int]], full: Sequence[int]) -> str:
    """The ``#tp.slice<...>`` of ``ranges`` along ``axis`` of a tensor of shape ``full``, as
    the attribute prints itself (it verifies: a range out of bounds raises)."""
    return str(SliceAttr(axis, ranges, full))


def chip_hint(what: str, chip: int | None) -> str:
    """A value name hint marked with its chip (``zeros_c1``), unmarked on the spine."""
    return what if chip is None else f"{what}_c{chip}"


def float_literal(value: float) -> str:
    """An MLIR float literal for ``value`` (f32 infinities as their bit patterns)."""
    v = float(value)
    if v in (float("inf"), float("-inf")):
        return "0x7F800000" if v > 0 else "0xFF800000"
    text = repr(v)
    if "e" in text and "." not in text:
        mantissa, exp = text.split("e")
        text = f"{mantissa}.0e{exp}"
    return text


def _elem(t: TensorT | str) -> str:
    return t.dtype if isinstance(t, TensorT) else t
