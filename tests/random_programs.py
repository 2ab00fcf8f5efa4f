"""Random valid tp programs for the property tests, as MLIR text with inputs and expected outputs.

A `Program` is built statement by statement by the `programs` strategy, which also evaluates
every statement in plain numpy as it goes (an independent model of what the program computes,
not the project's interpreter). Statements:

* ``tp.shard`` of a full host argument (each chip its slice of a random partition along one
  axis, possibly several ranges) or a copy of a spine input;
* chip-local elementwise ops on chip c (``linalg.add`` of chip-c and/or spine values, or
  ``arith.addf/subf/mulf`` of two chip-c values), the result on chip c;
* spine elementwise ops of spine values only;
* all-reduces over one value per chip, spelled ``tp.allreduce`` or the seed's left fold of
  ``linalg.add`` (chip 0 + chip 1 -> spine, + chip 2 -> spine, ...);
* carried state: ``tensor.extract_slice`` of a row on chip c, then ``tensor.insert_slice`` of
  it into a chip-c buffer in place — a value computed on chip c, or a chip-typed function
  argument (a cache passed in) — or the same on the spine (a spine statement updating a
  spine argument or a computed spine value in place). A buffer's old value may be read, and
  such reads come before its update in source order, never after (the buffer leaves every
  pool at its update; only its new value is read from then on), often by a statement that
  also reads a late value so that it would run late if nothing ordered it; the results of
  those reads reach the outputs, so reading the new value instead shows in the numbers;
* returns of a few spine values and optionally a ``tp.unshard`` of one value per chip (always,
  with the old-value readers' results, when some are chip values).

`Program.text` can also splice extra lines in before any statement (for leak injection).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import strategies as st

F32 = np.float32

SHAPES: tuple[tuple[int, int], ...] = ((2, 3), (1, 4), (3, 2), (2, 2))
ELEMENTWISE: dict[str, object] = {
    "arith.addf": np.add,
    "arith.subf": np.subtract,
    "arith.mulf": np.multiply,
}


@dataclass(frozen=True)
class Val:
    """A tensor value of the program: its SSA name (without %), chip (None: spine), and the
    index of the statement binding it (-1: a host value, i.e. an argument or a constant)."""

    name: str
    chip: int | None
    at: int


@dataclass(frozen=True)
class Partition:
    """Chip c's indices along ``axis`` of a full tensor of shape ``full``, as slice ranges."""

    axis: int
    full: tuple[int, int]
    indices: tuple[tuple[int, ...], ...]  # per chip, in the chip tensor's order

    def ranges(self, chip: int) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        for i in self.indices[chip]:
            if out and out[-1][0] + out[-1][1] == i:
                out[-1] = (out[-1][0], out[-1][1] + 1)
            else:
                out.append((i, 1))
        return out

    def attr(self, chip: int) -> str:
        ranges = ", ".join(f"({s}, {n})" for s, n in self.ranges(chip))
        full = ", ".join(map(str, self.full))
        return f"#tp.slice<axis = {self.axis}, ranges = [{ranges}], full = [{full}]>"

    def full_type(self) -> str:
        return f"tensor<{self.full[0]}x{self.full[1]}xf32>"


@dataclass
class Stmt:
    """One statement's MLIR lines (with any inline constants it uses) and its kind."""

    kind: str
    lines: list[str]
    binds: list[str]


@dataclass
class Program:
    """A random valid program: text pieces, inputs by name, and the numpy model's outputs."""

    n: int
    shape: tuple[int, int]
    args: list[tuple[str, str]]  # (name, type); tp.name is the name
    host_lines: list[str]  # constants, at the top of the body
    stmts: list[Stmt]
    results: list[tuple[str, str, str]]  # (value, type, tp.name)
    inputs: dict[str, np.ndarray]
    expected: dict[str, np.ndarray]
    values: list[Val]  # every tensor value of full shape, in binding order
    env: dict[str, np.ndarray] = field(repr=False)
    n_allreduce: int = 0
    n_fold: int = 0
    add_results: set[str] = field(default_factory=set)
    fold_results: set[str] = field(default_factory=set)

    def tensor_type(self, chip: int | None, rows: int | None = None) -> str:
        return tensor_type(self.shape, chip, rows)

    def defined_before(self, index: int) -> list[Val]:
        """Values bound by host or by statements before ``index`` (still live or not)."""
        return [v for v in self.values if v.at < index]

    def text(self, insert: dict[int, list[str]] | None = None) -> str:
        """The module; ``insert[i]`` lines go before statement i (i = len(stmts): at the end)."""
        insert = insert or {}
        args = ", ".join(f'%{a}: {t} {{tp.name = "{a}"}}' for a, t in self.args)
        res = ", ".join(f'{t} {{tp.name = "{name}"}}' for _, t, name in self.results)
        body: list[str] = list(self.host_lines)
        for i, stmt in enumerate(self.stmts):
            body += insert.get(i, [])
            body += stmt.lines
        body += insert.get(len(self.stmts), [])
        values = ", ".join(f"%{v}" for v, _, _ in self.results)
        types = ", ".join(t for _, t, _ in self.results)
        body.append(f"func.return {values} : {types}")
        inner = "\n".join(f"    {line}" for line in body)
        return (
            f"builtin.module attributes {{tp.chips = {self.n} : i64}} {{\n"
            f"  func.func @decode({args}) -> ({res}) {{\n{inner}\n  }}\n}}\n"
        )

    def __repr__(self) -> str:
        return f"Program(n={self.n}, shape={self.shape}):\n{self.text()}"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """What Hypothesis prints for a falsifying example: the program's text."""
        printer.text(repr(self))


def tensor_type(shape: tuple[int, int], chip: int | None, rows: int | None = None) -> str:
    enc = "" if chip is None else f", #tp.chip<{chip}>"
    r = shape[0] if rows is None else rows
    return f"tensor<{r}x{shape[1]}xf32{enc}>"


def take(full: np.ndarray, axis: int, indices: tuple[int, ...]) -> np.ndarray:
    return np.ascontiguousarray(np.take(full, list(indices), axis=axis))


class _Builder:
    """Statement-by-statement construction with a numpy model alongside."""

    def __init__(self, draw: st.DrawFn, n: int, shape: tuple[int, int], fold_hazards: bool) -> None:
        self.draw = draw
        self.fold_hazards = fold_hazards
        self.add_results: set[str] = set()  # bound by linalg.add / arith.addf
        self.fold_results: set[str] = set()  # bound by a fold of adds
        self.n = n
        self.shape = shape
        self.args: list[tuple[str, str]] = []
        self.stmts: list[Stmt] = []
        self.inputs: dict[str, np.ndarray] = {}
        self.env: dict[str, np.ndarray] = {}
        self.values: list[Val] = []
        self.live: list[Val] = []  # values that may still be read
        self.host_lines: list[str] = []
        self.fulls: list[tuple[str, Partition]] = []
        self.empties: dict[int | None, list[str]] = {}
        self.counter = 0
        self.old_readers: list[Val] = []  # results of reads of a buffer's old value
        self.n_allreduce = 0
        self.n_fold = 0
        seed = draw(st.integers(0, 2**32 - 1))
        self.rng = np.random.default_rng(seed)

    # -- naming and pools ---------------------------------------------------------------

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def t(self, chip: int | None, rows: int | None = None) -> str:
        return tensor_type(self.shape, chip, rows)

    def bind(self, name: str, chip: int | None, value: np.ndarray, host: bool = False) -> Val:
        """Bind ``name`` (call after emitting the statement that binds it)."""
        v = Val(name, chip, -1 if host else len(self.stmts) - 1)
        self.env[name] = np.asarray(value, dtype=F32)
        self.values.append(v)
        self.live.append(v)
        return v

    def pool(self, chip: int | None) -> list[Val]:
        return [v for v in self.live if v.chip == chip]

    def pick(self, vals: list[Val]) -> Val:
        # Latest first, so shrinking goes towards the most recent value.
        return self.draw(st.sampled_from(vals[::-1]))

    def emit(self, kind: str, lines: list[str], binds: list[str]) -> None:
        self.stmts.append(Stmt(kind, lines, binds))

    def empty(self, chip: int | None, lines: list[str]) -> str:
        """An init of ``chip``'s type: an earlier one reused, or a new one in ``lines``."""
        earlier = self.empties.setdefault(chip, [])
        if earlier and self.draw(st.booleans()):
            return self.draw(st.sampled_from(earlier))
        name = self.fresh("e")
        lines.append(f"%{name} = tensor.empty() : {self.t(chip)}")
        earlier.append(name)
        return name

    def random_array(self, shape: tuple[int, ...]) -> np.ndarray:
        return self.rng.uniform(-2.0, 2.0, size=shape).astype(F32)

    def partition(self, axis: int) -> Partition:
        r, c = self.shape
        length = (r, c)[axis]
        full = (r * self.n, c) if axis == 0 else (r, c * self.n)
        order = list(range(length * self.n))  # often contiguous blocks in chip order
        if self.draw(st.booleans()):
            order = self.draw(st.permutations(order))  # else scattered, several ranges
        per_chip = tuple(tuple(order[k * length : (k + 1) * length]) for k in range(self.n))
        return Partition(axis, full, per_chip)

    # -- host values --------------------------------------------------------------------

    def spine_arg(self) -> Val:
        name = self.fresh("x")
        self.args.append((name, self.t(None)))
        self.inputs[name] = self.random_array(self.shape)
        return self.bind(name, None, self.inputs[name], host=True)

    def spine_constant(self) -> Val:
        value = self.draw(st.sampled_from([0.5, 1.0, -1.5, 2.0]))
        name = self.fresh("k")
        self.host_lines.append(f"%{name} = arith.constant dense<{value}> : {self.t(None)}")
        return self.bind(name, None, np.full(self.shape, value, F32), host=True)

    def chip_arg(self, chip: int) -> Val:
        """A chip-typed function argument: chip c's own tensor, passed in (e.g. its cache)."""
        name = self.fresh("c")
        self.args.append((name, self.t(chip)))
        self.inputs[name] = self.random_array(self.shape)
        return self.bind(name, chip, self.inputs[name], host=True)

    def full_arg(self) -> tuple[str, Partition]:
        part = self.partition(self.draw(st.integers(0, 1)))
        name = self.fresh("w")
        self.args.append((name, part.full_type()))
        self.inputs[name] = self.random_array(part.full)
        self.fulls.append((name, part))
        return name, part

    # -- statements ---------------------------------------------------------------------

    def shard(self, chip: int) -> Val:
        name = self.fresh("v")
        how = self.draw(st.integers(0, 3))
        # A spine input updated in place is no longer live: never read its old value again.
        spine_inputs = [v for v in self.live if v.name in self.inputs and v.chip is None]
        if how == 0 and spine_inputs:
            # A chip's copy of a whole spine input: a one-range slice of it.
            x = self.pick(spine_inputs)
            r, c = self.shape
            sl = f"#tp.slice<axis = 0, ranges = [(0, {r})], full = [{r}, {c}]>"
            line = f"%{name} = tp.shard %{x.name} at {sl} : {self.t(None)} -> {self.t(chip)}"
            self.emit("shard", [line], [name])
            return self.bind(name, chip, self.env[x.name])
        if how == 1 or not self.fulls:
            src, part = self.full_arg()
        else:
            src, part = self.draw(st.sampled_from(self.fulls))
        line = (
            f"%{name} = tp.shard %{src} at {part.attr(chip)} : {part.full_type()} -> {self.t(chip)}"
        )
        self.emit("shard", [line], [name])
        return self.bind(name, chip, take(self.inputs[src], part.axis, part.indices[chip]))

    def chip_value(self, chip: int) -> Val:
        pool = self.pool(chip)
        return self.pick(pool) if pool else self.shard(chip)

    def elementwise(self, chip: int | None) -> Val:
        """An elementwise statement binding a value on ``chip`` (None: the spine)."""
        ops = ["linalg.add", *ELEMENTWISE]
        op = self.draw(st.sampled_from(ops))
        name = self.fresh("v")
        lines: list[str] = []
        if op == "linalg.add":
            candidates = self.pool(None) + ([] if chip is None else self.pool(chip))
            a, b = self.pick(candidates), self.pick(candidates)
            a = self.not_fold_result(a, candidates)
            e = self.empty(chip, lines)
            lines.append(
                f"%{name} = linalg.add ins(%{a.name}, %{b.name} : {self.t(a.chip)}, "
                f"{self.t(b.chip)}) outs(%{e} : {self.t(chip)}) -> {self.t(chip)}"
            )
            value = np.asarray(self.env[a.name] + self.env[b.name], dtype=F32)
        else:
            if chip is None:
                a, b = self.pick(self.pool(None)), self.pick(self.pool(None))
                if op == "arith.addf":
                    a = self.not_fold_result(a, self.pool(None))
            else:
                a = self.chip_value(chip)
                b = self.chip_value(chip)
            lines.append(f"%{name} = {op} %{a.name}, %{b.name} : {self.t(chip)}")
            fn = ELEMENTWISE[op]
            value = np.asarray(fn(self.env[a.name], self.env[b.name]), dtype=F32)  # type: ignore[operator]
        self.emit("chip" if chip is not None else "spine", lines, [name])
        if op in ("linalg.add", "arith.addf"):
            self.add_results.add(name)
        return self.bind(name, chip, value)

    def not_fold_result(self, lhs: Val, candidates: list[Val]) -> Val:
        """Without fold hazards: an add's left operand is never a fold's sum (which would
        continue the fold's chain of adds); another candidate is taken instead."""
        if self.fold_hazards or lhs.name not in self.fold_results:
            return lhs
        return self.pick([v for v in candidates if v.name not in self.fold_results])

    def allreduce(self, busy: frozenset[int] = frozenset()) -> Val:
        """An all-reduce over a value of each chip: the latest one on the ``busy`` chips."""
        partials = [
            self.pool(c)[-1] if c in busy and self.pool(c) else self.chip_value(c)
            for c in range(self.n)
        ]
        name = self.fresh("s")
        total = self.env[partials[0].name]
        for p in partials[1:]:
            total = np.asarray(total + self.env[p.name], dtype=F32)
        self.n_allreduce += 1
        # Without fold hazards, a fold never starts at a chip-local add's result (the chain
        # of adds would run back into that add); such an all-reduce is spelled tp.allreduce.
        foldable = self.fold_hazards or partials[0].name not in self.add_results
        if self.n >= 2 and foldable and self.draw(st.booleans()):
            self.n_fold += 1
            self.fold_results.add(name)
            lines: list[str] = []
            e = self.empty(None, lines)
            acc = partials[0]
            for k, p in enumerate(partials[1:], start=1):
                out = name if k == self.n - 1 else self.fresh("f")
                lines.append(
                    f"%{out} = linalg.add ins(%{acc.name}, %{p.name} : {self.t(acc.chip)}, "
                    f"{self.t(p.chip)}) outs(%{e} : {self.t(None)}) -> {self.t(None)}"
                )
                acc = Val(out, None, -2)  # an intermediate sum: never read elsewhere
            self.emit("fold", lines, [name])
        else:
            names = ", ".join(f"%{p.name}" for p in partials)
            types = ", ".join(self.t(p.chip) for p in partials)
            self.emit(
                "allreduce",
                [f"%{name} = tp.allreduce {names} : {types} -> {self.t(None)}"],
                [name],
            )
        return self.bind(name, None, total)

    def buffer(self, chip: int | None) -> Val:
        """The carried state to update in place on ``chip`` (None: the spine): a live value
        there, or a new function argument (a cache passed in). Not a constant (every chip's
        own) nor a fold's sum (a chain of adds the fold analyses follow)."""
        if chip is None:
            pool = [
                v
                for v in self.pool(None)
                if (v.name in self.inputs or v.at >= 0) and v.name not in self.fold_results
            ]
        else:
            pool = self.pool(chip)
        if pool and self.draw(st.booleans()):
            return self.pick(pool)
        return self.spine_arg() if chip is None else self.chip_arg(chip)

    def old_reader(self, buf: Val) -> Val:
        """A statement reading ``buf``'s old value (before its update, in source order) and a
        late value — often the sum of an all-reduce of fresh work on the other chips — so
        that nothing but the storage orders it before the update. A chip buffer is read on
        its chip; a spine one on the spine or on a chip."""
        if buf.chip is None and self.draw(st.booleans()):
            chip: int | None = None
        else:
            chip = buf.chip if buf.chip is not None else self.draw(st.integers(0, self.n - 1))
        if self.n >= 2 and self.draw(st.integers(0, 3)) > 0:
            # The sum of an all-reduce of fresh work on the other chips: the reader waits for
            # it while the buffer's chip idles — phases the update would fill (and so run
            # before the reader) if nothing but its operands ordered it.
            busy = frozenset(range(self.n)) - {buf.chip}
            for c in sorted(busy):
                for _ in range(self.draw(st.integers(1, 3))):
                    self.elementwise(c)
            other = self.allreduce(busy)
        else:
            # In binding order, so that the last one is the latest value.
            pool = [v for v in self.live if v.chip is None or v.chip == chip]
            candidates = [v for v in pool if v != buf] or [buf]
            other = candidates[-1] if self.draw(st.booleans()) else self.pick(candidates)
        name = self.fresh("v")
        lines: list[str] = []
        if buf.chip == chip and other.chip == chip and self.draw(st.booleans()):
            op = self.draw(st.sampled_from(["arith.subf", "arith.mulf"]))
            lines.append(f"%{name} = {op} %{buf.name}, %{other.name} : {self.t(chip)}")
            fn = ELEMENTWISE[op]
            value = np.asarray(fn(self.env[buf.name], self.env[other.name]), dtype=F32)  # type: ignore[operator]
        else:
            e = self.empty(chip, lines)
            lines.append(
                f"%{name} = linalg.add ins(%{buf.name}, %{other.name} : {self.t(buf.chip)}, "
                f"{self.t(other.chip)}) outs(%{e} : {self.t(chip)}) -> {self.t(chip)}"
            )
            value = np.asarray(self.env[buf.name] + self.env[other.name], dtype=F32)
            self.add_results.add(name)
        self.emit("spine" if chip is None else "chip", lines, [name])
        reader = self.bind(name, chip, value)
        self.old_readers.append(reader)
        return reader

    def update(self, chip: int | None) -> Val:
        """Carried state: a row of a value on ``chip`` (None: the spine) written in place into
        a buffer there, its old value perhaps read first."""
        buf = self.buffer(chip)
        r, c = self.shape
        # The row comes from another row of the buffer itself (an early read: a row moved
        # within the cache) or from another value there — never the same row of the buffer
        # (the update would change nothing, hiding a misordered reader), and chosen before
        # the old value's reader is made (so it never waits for that reader).
        others = [v for v in self.pool(chip) if v != buf]
        i = self.draw(st.integers(0, r - 1))
        if r > 1 and (not others or self.draw(st.booleans())):
            src = buf
            o = (i + self.draw(st.integers(1, r - 1))) % r
        else:
            if others:
                src = self.pick(others)
            else:
                src = self.shard(chip) if chip is not None else self.spine_arg()
            o = self.draw(st.integers(0, r - 1))
        if self.draw(st.integers(0, 3)) > 0:
            self.old_reader(buf)
        row = self.fresh("row")
        row_t = self.t(chip, rows=1)
        self.emit(
            "extract",
            [
                f"%{row} = tensor.extract_slice %{src.name}[{i}, 0] [1, {c}] [1, 1] : "
                f"{self.t(chip)} to {row_t}"
            ],
            [row],
        )
        row_value = self.env[src.name][i : i + 1, :].copy()
        name = self.fresh("v")
        self.emit(
            "update",
            [
                f"%{name} = tensor.insert_slice %{row} into %{buf.name}[{o}, 0] [1, {c}] "
                f"[1, 1] : {row_t} into {self.t(chip)}"
            ],
            [name],
        )
        value = self.env[buf.name].copy()
        value[o : o + 1, :] = row_value
        self.live.remove(buf)  # updated in place: only the new value may be read now
        return self.bind(name, chip, value)


@st.composite
def programs(
    draw: st.DrawFn,
    chips: st.SearchStrategy[int] | None = None,
    min_statements: int = 3,
    max_statements: int = 25,
    fold_hazards: bool = True,
) -> Program:
    """A random valid tp program over 1..4 chips (or ``chips``).

    With ``fold_hazards=False`` two valid shapes are left out that once fooled tp's fold
    analysis (a fold whose first partial is an add's result, and a fold's sum as the left
    operand of a later add; regression tests in `tests/test_properties_lowering.py`).
    """
    n = draw(chips if chips is not None else st.integers(1, 4))
    shape = draw(st.sampled_from(SHAPES))
    b = _Builder(draw, n, shape, fold_hazards)
    for _ in range(draw(st.integers(1, 2))):
        b.spine_arg()
    if draw(st.booleans()):
        b.spine_constant()
    budget = draw(st.integers(min_statements, max_statements))
    kinds = [
        "shard",
        "chip",
        "chip",
        "chip",
        "spine",
        "allreduce",
        "allreduce",
        "update",
        "update",
        "spine-update",
    ]
    while len(b.stmts) < budget - 1:
        kind = draw(st.sampled_from(kinds))
        chip = draw(st.integers(0, n - 1))
        if kind == "shard":
            b.shard(chip)
        elif kind == "chip":
            b.elementwise(chip)
        elif kind == "spine":
            b.elementwise(None)
        elif kind == "allreduce":
            b.allreduce()
        elif kind == "update":
            b.update(chip)
        else:
            b.update(None)
    results: list[tuple[str, str, str]] = []
    expected: dict[str, np.ndarray] = {}
    spine = b.pool(None)
    computed = [v for v in spine if v.at >= 0]
    choices = computed if computed and draw(st.integers(0, 4)) > 0 else spine
    count = draw(st.integers(1, min(3, len(choices))))
    picked = draw(
        st.lists(st.sampled_from(choices[::-1]), min_size=count, max_size=count, unique=True)
    )
    # What read a buffer's old value reaches the outputs (if it is still live): a spine
    # value is returned, a chip value is its chip's part of the unshard.
    late = [v for v in b.old_readers if v in b.live]
    picked += [v for v in late if v.chip is None and v not in picked]
    for k, v in enumerate(picked):
        results.append((v.name, b.t(None), f"out{k}"))
        expected[f"out{k}"] = b.env[v.name]
    chip_readers = {v.chip: v for v in late if v.chip is not None}
    if chip_readers or draw(st.booleans()):
        parts = [chip_readers.get(c) or b.chip_value(c) for c in range(n)]
        part = b.partition(draw(st.integers(0, 1)))
        order = draw(st.permutations(range(n)))
        name = b.fresh("u")
        operands = ", ".join(f"%{parts[c].name}" for c in order)
        slices = ", ".join(part.attr(c) for c in order)
        types = ", ".join(b.t(c) for c in order)
        b.emit(
            "unshard",
            [f"%{name} = tp.unshard {operands} slices [{slices}] : {types} -> {part.full_type()}"],
            [name],
        )
        full = np.zeros(part.full, F32)
        for c in range(n):
            index: list[object] = [slice(None), slice(None)]
            index[part.axis] = list(part.indices[c])
            full[tuple(index)] = b.env[parts[c].name]
        results.append((name, part.full_type(), "u"))
        expected["u"] = full
    return Program(
        n=n,
        shape=shape,
        args=b.args,
        host_lines=b.host_lines,
        stmts=b.stmts,
        results=results,
        inputs=b.inputs,
        expected=expected,
        values=b.values,
        env=b.env,
        n_allreduce=b.n_allreduce,
        n_fold=b.n_fold,
        add_results=b.add_results,
        fold_results=b.fold_results,
    )
