"""Vocab-parallel LM-head programs for the tests: a greedy token from N chips by ``tp.maxloc``.

`head_program` writes, in the IR forms of issue 24 (docs/certificate.md's maxloc rule), the
tail of a decoder step on N chips:

- optionally ``layers`` row-parallel projections, each ``h = x + Σ_c x[:, cols c] · W_c``
  (a ``tp.allreduce`` of contractions over column runs of the activation and the weight),
  inline or in a ``func.func private @layer`` called once a layer (``outline``);
- the final norm's scale (spine: ``h · norm``);
- the head, vocab-parallel: chip c holds rows ``[o_c, o_c + n_c)`` of ``lm_head.weight``
  ``[V, H]`` (``ceil(V/N)`` rows a chip, the last chip the rest, or the ``runs`` given), its
  logits ``[B, n_c]`` a contraction from zeros, its argmax ``{doc = "argmax"}`` from
  ``(-inf, 0)`` with the index offset by ``o_c``;
- one ``tp.maxloc`` of the chips' pairs: ``next_ids`` (and, with ``logits``, the logits
  gathered by ``tp.unshard``).

`reference` is the same step in plain numpy, written from the math above (not from the IR).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np

F32 = "f32"


def vocab_runs(vocab: int, chips: int) -> list[tuple[int, int]]:
    """Chip c's rows of a vocab of ``vocab``: ``ceil(V/N)`` each, the last chip the rest."""
    each = math.ceil(vocab / chips)
    runs = [(c * each, min(each, vocab - c * each)) for c in range(chips)]
    assert all(n > 0 for _, n in runs), f"{chips} chips leave one without rows of {vocab}"
    return runs


def _t(shape: Sequence[int], elem: str = F32, chip: int | None = None) -> str:
    dims = "x".join(map(str, shape))
    enc = "" if chip is None else f", #tp.chip<{chip}>"
    return f"tensor<{dims}x{elem}{enc}>"


def _contraction(
    out: str, a: str, ta: str, b: str, tb: str, init: str, tout: str, maps: str
) -> str:
    return f"""    {out} = linalg.generic {{indexing_maps = {maps},
        iterator_types = ["parallel", "parallel", "reduction"]}}
        ins({a}, {b} : {ta}, {tb}) outs({init} : {tout}) {{
    ^bb0(%ea: f32, %eb: f32, %acc: f32):
      %p = arith.mulf %ea, %eb : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
    }} -> {tout}
"""


# (b, o, i): x[b, i] * W[o, i] -> out[b, o]  (nn.Linear's weight [out, in])
_LINEAR = (
    "[affine_map<(b, o, i) -> (b, i)>, affine_map<(b, o, i) -> (o, i)>, "
    "affine_map<(b, o, i) -> (b, o)>]"
)


def _layer_body(chips: int, batch: int, hidden: int, x: str, w: str, tag: str) -> str:
    """``x + Σ_c x[:, cols c] · W[:, cols c]ᵀ`` over the chips, named after ``tag``."""
    k = hidden // chips
    lines = ""
    partials = []
    for c in range(chips):
        xt, wt, pt = _t((batch, k), chip=c), _t((hidden, k), chip=c), _t((batch, hidden), chip=c)
        lines += (
            f"    %{tag}x{c} = tensor.extract_slice {x}[0, {c * k}] [{batch}, {k}] [1, 1] : "
            f"{_t((batch, hidden))} to {xt}\n"
            f"    %{tag}w{c} = tp.shard {w} at #tp.slice<axis = 1, ranges = [({c * k}, {k})], "
            f"full = [{hidden}, {hidden}]> : {_t((hidden, hidden))} -> {wt}\n"
            f"    %{tag}e{c} = tensor.empty() : {pt}\n"
            f"    %{tag}z{c} = linalg.fill ins(%zero : f32) outs(%{tag}e{c} : {pt}) -> {pt}\n"
        )
        lines += _contraction(
            f"%{tag}p{c}", f"%{tag}x{c}", xt, f"%{tag}w{c}", wt, f"%{tag}z{c}", pt, _LINEAR
        )
        partials.append((f"%{tag}p{c}", pt))
    spine = _t((batch, hidden))
    lines += (
        f"    %{tag}sum = tp.allreduce {', '.join(p for p, _ in partials)} : "
        f"{', '.join(t for _, t in partials)} -> {spine}\n"
        f"    %{tag}e = tensor.empty() : {spine}\n"
        f"    %{tag}out = linalg.add ins(%{tag}sum, {x} : {spine}, {spine}) "
        f"outs(%{tag}e : {spine}) -> {spine}\n"
    )
    return lines


def head_program(
    chips: int,
    batch: int = 2,
    hidden: int = 8,
    vocab: int = 12,
    layers: int = 1,
    outline: bool = False,
    logits: bool = False,
    algorithm: str | None = None,
    runs: Sequence[tuple[int, int]] | None = None,
) -> str:
    """The program text (module docstring); ``algorithm``: the maxloc's, written on it."""
    runs = list(runs) if runs is not None else vocab_runs(vocab, chips)
    assert hidden % chips == 0 and len(runs) == chips
    h = _t((batch, hidden))
    args = [f'%x: {h} {{tp.name = "x", tp.role = "input"}}']
    args += [
        f'%o{i}: {_t((hidden, hidden))} {{tp.name = "layers.{i}.o_proj.weight", '
        'tp.role = "weight"}'
        for i in range(layers)
    ]
    args += [
        f'%norm: {_t((hidden,))} {{tp.name = "model.norm.weight", tp.role = "weight"}}',
        f'%head: {_t((vocab, hidden))} {{tp.name = "lm_head.weight", tp.role = "weight"}}',
    ]
    results = [f'{_t((batch,), "i64")} {{tp.name = "next_ids"}}']
    if logits:
        results.append(f'{_t((batch, vocab))} {{tp.name = "logits"}}')
    body = "    %zero = arith.constant 0.0 : f32\n"
    body += "    %ninf = arith.constant 0xFF800000 : f32\n"
    body += "    %izero = arith.constant 0 : i64\n"
    x = "%x"
    for i in range(layers):
        if outline:
            w = _t((hidden, hidden))
            body += f"    %l{i}_out = func.call @layer({x}, %o{i}) : ({h}, {w}) -> {h}\n"
        else:
            body += _layer_body(chips, batch, hidden, x, f"%o{i}", f"l{i}_")
        x = f"%l{i}_out"
    body += (
        f"    %ne = tensor.empty() : {h}\n"
        f"    %hn = linalg.generic {{indexing_maps = [affine_map<(b, i) -> (b, i)>, "
        f"affine_map<(b, i) -> (i)>, affine_map<(b, i) -> (b, i)>], "
        f'iterator_types = ["parallel", "parallel"]}}\n'
        f"        ins({x}, %norm : {h}, {_t((hidden,))}) outs(%ne : {h}) {{\n"
        f"    ^bb0(%a: f32, %g: f32, %o: f32):\n"
        f"      %s = arith.mulf %a, %g : f32\n"
        f"      linalg.yield %s : f32\n"
        f"    }} -> {h}\n"
    )
    values, indices, parts = [], [], []
    for c, (start, n) in enumerate(runs):
        wt, lt = _t((n, hidden), chip=c), _t((batch, n), chip=c)
        mt, it = _t((batch,), chip=c), _t((batch,), "i64", c)
        body += (
            f"    %hw{c} = tp.shard %head at #tp.slice<axis = 0, ranges = [({start}, {n})], "
            f"full = [{vocab}, {hidden}]> : {_t((vocab, hidden))} -> {wt}\n"
            f"    %le{c} = tensor.empty() : {lt}\n"
            f"    %lz{c} = linalg.fill ins(%zero : f32) outs(%le{c} : {lt}) -> {lt}\n"
        )
        body += _contraction(f"%logits{c}", "%hn", h, f"%hw{c}", wt, f"%lz{c}", lt, _LINEAR)
        body += (
            f"    %me{c} = tensor.empty() : {mt}\n"
            f"    %mi{c} = linalg.fill ins(%ninf : f32) outs(%me{c} : {mt}) -> {mt}\n"
            f"    %ie{c} = tensor.empty() : {it}\n"
            f"    %ii{c} = linalg.fill ins(%izero : i64) outs(%ie{c} : {it}) -> {it}\n"
            f'    %max{c}, %ids{c} = linalg.generic {{doc = "argmax", indexing_maps = '
            f"[affine_map<(b, v) -> (b, v)>, affine_map<(b, v) -> (b)>, "
            f'affine_map<(b, v) -> (b)>], iterator_types = ["parallel", "reduction"]}}\n'
            f"        ins(%logits{c} : {lt}) outs(%mi{c}, %ii{c} : {mt}, {it}) {{\n"
            f"    ^bb0(%v: f32, %m: f32, %i: i64):\n"
            f"      %j = linalg.index 1 : index\n"
            f"      %g = arith.index_cast %j : index to i64\n"
            f"      %off = arith.constant {start} : i64\n"
            f"      %gg = arith.addi %g, %off : i64\n"
            f"      %gt = arith.cmpf ogt, %v, %m : f32\n"
            f"      %nm = arith.select %gt, %v, %m : f32\n"
            f"      %ni = arith.select %gt, %gg, %i : i64\n"
            f"      linalg.yield %nm, %ni : f32, i64\n"
            f"    }} -> {mt}, {it}\n"
        )
        values.append((f"%max{c}", mt))
        indices.append((f"%ids{c}", it))
        parts.append((f"%logits{c}", lt, start, n))
    alg = f' algorithm "{algorithm}"' if algorithm else ""
    body += (
        f"    %best, %next_ids = tp.maxloc {', '.join(v for v, _ in values)} indices "
        f"{', '.join(i for i, _ in indices)}{alg} : {', '.join(t for _, t in values)} indices "
        f"{', '.join(t for _, t in indices)} -> {_t((batch,))}, {_t((batch,), 'i64')}\n"
    )
    returned = [("%next_ids", _t((batch,), "i64"))]
    if logits:
        slices = ", ".join(
            f"#tp.slice<axis = 1, ranges = [({s}, {n})], full = [{batch}, {vocab}]>"
            for _, _, s, n in parts
        )
        body += (
            f"    %logits = tp.unshard {', '.join(p for p, _, _, _ in parts)} slices "
            f"[{slices}] : {', '.join(t for _, t, _, _ in parts)} -> {_t((batch, vocab))}\n"
        )
        returned.append(("%logits", _t((batch, vocab))))
    body += (
        f"    func.return {', '.join(v for v, _ in returned)} : "
        f"{', '.join(t for _, t in returned)}\n"
    )
    layer = ""
    if outline and layers:
        w = _t((hidden, hidden))
        layer = (
            f"  func.func private @layer(%x: {h}, %w: {w}) -> {h} {{\n"
            "    %zero = arith.constant 0.0 : f32\n"
            + _layer_body(chips, batch, hidden, "%x", "%w", "")
            + f"    func.return %out : {h}\n  }}\n"
        )
    return (
        f"builtin.module attributes {{tp.chips = {chips} : i64}} {{\n{layer}"
        f"  func.func @decode({', '.join(args)})\n      -> ({', '.join(results)}) {{\n"
        f"{body}  }}\n}}\n"
    )


def reference(values: dict[str, np.ndarray], layers: int = 1) -> dict[str, np.ndarray]:
    """The step in plain numpy (float64, then rounded to the program's types): each layer
    ``x + x @ Wᵀ``, the norm's scale, the logits ``h @ headᵀ`` and their first argmax."""
    x = values["x"].astype(np.float64)
    for i in range(layers):
        x = x + x @ values[f"layers.{i}.o_proj.weight"].astype(np.float64).T
    h = x * values["model.norm.weight"].astype(np.float64)
    logits = h @ values["lm_head.weight"].astype(np.float64).T
    return {
        "next_ids": np.argmax(logits, axis=1).astype(np.int64),
        "logits": logits.astype(np.float32),
    }


# -- faults the certificate rule refuses (docs/certificate.md, "maxloc") ----------------------


def _argmax_block(text: str, chip: int) -> tuple[int, int]:
    """Where chip ``chip``'s argmax generic lies in ``text`` (start, end)."""
    start = text.index(f"    %max{chip}, %ids{chip} = linalg.generic")
    end = text.index("\n", text.index("    } -> ", start)) + 1
    return start, end


def _in_argmax(text: str, chip: int, old: str, new: str) -> str:
    start, end = _argmax_block(text, chip)
    block = text[start:end]
    assert old in block, old
    return text[:start] + block.replace(old, new) + text[end:]


def wrong_offset(text: str, chip: int, start: int) -> str:
    """Chip ``chip``'s argmax counts its index from ``start + 1``, not its run's start."""
    return _in_argmax(
        text, chip, f"arith.constant {start} : i64", f"arith.constant {start + 1} : i64"
    )


def last_maximum(text: str, chip: int) -> str:
    """Chip ``chip``'s body keeps the LAST maximum (``oge``): not an argmax."""
    return _in_argmax(text, chip, "arith.cmpf ogt", "arith.cmpf oge")


def from_zero(text: str, chip: int) -> str:
    """Chip ``chip``'s largest value starts from 0.0, not -inf."""
    old = f"linalg.fill ins(%ninf : f32) outs(%me{chip} "
    assert old in text
    return text.replace(old, f"linalg.fill ins(%zero : f32) outs(%me{chip} ")


def two_generics(text: str, chip: int) -> str:
    """Chip ``chip``'s pair takes its value from its argmax and its index from a second,
    identical argmax: not the two results of one generic."""
    start, end = _argmax_block(text, chip)
    twin = text[start:end].replace(f"%max{chip}, %ids{chip} =", f"%max{chip}b, %ids{chip}b =")
    text = text[:end] + twin + text[end:]
    at = text.index(" = tp.maxloc ")
    line_end = text.index("\n", at)
    line = re.sub(rf"%ids{chip}\b(?![b])", f"%ids{chip}b", text[at:line_end])
    return text[:at] + line + text[line_end:]


def two_runs(text: str, chip: int, runs: Sequence[tuple[int, int]]) -> str:
    """Chip ``chip`` holds two runs of the vocab (``runs``, as many rows as it had)."""
    ranges = ", ".join(f"({s}, {n})" for s, n in runs)
    head = f"%hw{chip} = tp.shard %head at #tp.slice<axis = 0, ranges = ["
    at = text.index(head) + len(head)
    return text[:at] + ranges + text[text.index("]", at) :]


def logits_program(runs: Sequence[tuple[int, int]], batch: int, vocab: int) -> str:
    """``@main(%logits: [batch, vocab])``: chip c's argmax over its run ``runs[c]`` of the
    vocab (a ``tp.shard`` of the logits; any runs, in any order over the chips), then one
    ``tp.maxloc``; returns (value, index)."""
    full = _t((batch, vocab))
    body = "    %ninf = arith.constant 0xFF800000 : f32\n    %izero = arith.constant 0 : i64\n"
    for c, (start, n) in enumerate(runs):
        lt, vt, it = _t((batch, n), chip=c), _t((batch,), chip=c), _t((batch,), "i64", c)
        body += (
            f"    %l{c} = tp.shard %logits at #tp.slice<axis = 1, ranges = [({start}, {n})], "
            f"full = [{batch}, {vocab}]> : {full} -> {lt}\n"
            f"    %me{c} = tensor.empty() : {vt}\n"
            f"    %mi{c} = linalg.fill ins(%ninf : f32) outs(%me{c} : {vt}) -> {vt}\n"
            f"    %ie{c} = tensor.empty() : {it}\n"
            f"    %ii{c} = linalg.fill ins(%izero : i64) outs(%ie{c} : {it}) -> {it}\n"
            f'    %max{c}, %ids{c} = linalg.generic {{doc = "argmax", indexing_maps = '
            f"[affine_map<(b, v) -> (b, v)>, affine_map<(b, v) -> (b)>, "
            f'affine_map<(b, v) -> (b)>], iterator_types = ["parallel", "reduction"]}}\n'
            f"        ins(%l{c} : {lt}) outs(%mi{c}, %ii{c} : {vt}, {it}) {{\n"
            f"    ^bb0(%v: f32, %m: f32, %i: i64):\n"
            f"      %j = linalg.index 1 : index\n"
            f"      %g = arith.index_cast %j : index to i64\n"
            f"      %off = arith.constant {start} : i64\n"
            f"      %gg = arith.addi %g, %off : i64\n"
            f"      %gt = arith.cmpf ogt, %v, %m : f32\n"
            f"      %nm = arith.select %gt, %v, %m : f32\n"
            f"      %ni = arith.select %gt, %gg, %i : i64\n"
            f"      linalg.yield %nm, %ni : f32, i64\n"
            f"    }} -> {vt}, {it}\n"
        )
    chips = range(len(runs))
    vts = ", ".join(_t((batch,), chip=c) for c in chips)
    its = ", ".join(_t((batch,), "i64", c) for c in chips)
    vt, it = _t((batch,)), _t((batch,), "i64")
    return (
        f"builtin.module attributes {{tp.chips = {len(runs)} : i64}} {{\n"
        f"  func.func @main(%logits: {full}) -> ({vt}, {it}) {{\n{body}"
        f"    %v, %i = tp.maxloc {', '.join(f'%max{c}' for c in chips)} indices "
        f"{', '.join(f'%ids{c}' for c in chips)} : {vts} indices {its} -> {vt}, {it}\n"
        f"    func.return %v, %i : {vt}, {it}\n  }}\n}}\n"
    )
