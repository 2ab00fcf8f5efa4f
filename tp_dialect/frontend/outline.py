"""The outlined form of a decode step: one layer written once, as a function, and called.

``tp-gen … --outline`` writes ``func.func private @layer`` taking one layer's inputs (the
hidden state, the step's position and whatever else every layer shares, then the layer's
weights and its caches, in the flat program's argument order) and returning the new hidden
state and the updated caches; ``@decode`` keeps the flat program's ports (names, roles,
results: so a host binds the same checkpoint) and calls ``@layer`` once per layer with that
layer's weights and caches. ``tp-opt --tp-inline`` gives the flat program back.

``@layer`` is *private*: no host calls it and tp's tools pick ``@decode`` as the entry, so
it is not an entry point but part of ``@decode``'s body written once; private visibility
says exactly that (a symbol only this module's calls may use), lets a pass that has inlined
every call erase it, and keeps a tool that lists a module's public functions from taking it
for a second program. Its arguments carry no ``tp.name``/``tp.role``: ports are the
entry's alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tp_dialect.frontend.emitter import Emitter, TensorT, Value
from tp_dialect.names import LAYER_ATTR

LAYER = "layer"  # the outlined layer's symbol


@dataclass
class LayerFunction:
    """The ``func.func private @layer`` being written: its body (its own emitter, so its
    SSA names and shared constants are its own), its arguments and its results."""

    e: Emitter = field(default_factory=Emitter)
    args: list[Value] = field(default_factory=list[Value])
    results: list[Value] = field(default_factory=list[Value])

    def arg(self, name: str, t: TensorT | str) -> Value:
        """A new argument named ``name`` (made unique), in declaration order."""
        value = Value(self.e.fresh(name), t)
        self.args.append(value)
        return value

    def text(self) -> list[str]:
        """The function's lines, indented to sit in a module beside ``@decode``."""
        args = ", ".join(f"{a}: {a.type}" for a in self.args)
        res = ", ".join(str(r.type) for r in self.results)
        vals = ", ".join(str(r) for r in self.results)
        head = f"  func.func private @{LAYER}({args}) -> ({res}) {{"
        tail = [f"    func.return {vals} : {res}", "  }"]
        return [head, *self.e.lines, *tail]


def call_layer(
    e: Emitter, layer: LayerFunction, operands: Sequence[Value], hints: Sequence[str], index: int
) -> list[Value]:
    """``func.call @layer(operands) {tp.layer = index}`` in ``e``'s function, its results
    named ``hints``: the call states which layer it runs (`tp_dialect.names.LAYER_ATTR`)."""
    if len(operands) != len(layer.args) or len(hints) != len(layer.results):
        raise ValueError("a call to @layer must match its signature")
    results = [Value(e.fresh(h), r.type) for h, r in zip(hints, layer.results, strict=True)]
    ins = ", ".join(str(v.type) for v in operands)
    outs = ", ".join(str(r.type) for r in results)
    e.line(
        f"{', '.join(map(str, results))} = func.call @{LAYER}({', '.join(map(str, operands))}) "
        f"{{{LAYER_ATTR} = {index} : i64}} : ({ins}) -> ({outs})"
    )
    return results
