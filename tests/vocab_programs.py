# ruff: noqa: E501  (IR text is written out one op per line)
"""Small unsharded whole-model programs in the forms of issue 24 §1, written out by hand: an
embedding gather from the token table, one MLP (colwise up, rowwise down) or none, the last
position's hidden state, an RMS norm, the LM head (its own weight, or the tied table) and the
greedy argmax. Names are Hugging Face's (the llama family's, or GPT-2's with ``wpe``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Model:
    """One small whole model's dimensions and form."""

    vocab: int = 10
    hidden: int = 8
    inner: int = 24
    batch: int = 2
    tokens: int = 3
    positions: int = 8  # GPT-2's wpe rows
    tied: bool = False
    gpt2: bool = False
    mlp: bool = True
    table: str = "f32"  # the embedding table's dtype (bf16: widened by arith.extf)
    logits: bool = True
    greedy: bool = True  # the argmax and its next_ids (False: the logits alone)
    entry: str = "prefill"

    @property
    def embed_name(self) -> str:
        return "transformer.wte.weight" if self.gpt2 else "model.embed_tokens.weight"

    def layer(self, what: str) -> str:
        return f"transformer.h.0.mlp.{what}" if self.gpt2 else f"model.layers.0.mlp.{what}"


MAP3 = "affine_map<(b, s, h) -> (b, s, h)>"
MATMUL3 = "[affine_map<(b, s, o, k) -> (b, s, k)>, affine_map<(b, s, o, k) -> (o, k)>, affine_map<(b, s, o, k) -> (b, s, o)>]"
PRODUCT = """    ^bb0(%a: f32, %w: f32, %acc: f32):
      %m = arith.mulf %a, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32"""


def _gather(result: str, table: str, rows: str, m: Model, ids: str, row: list[str]) -> list[str]:
    """``result = table[row(id), h]`` over ``[B, S, H]``: the embedding form of §1."""
    b, s, h, dt = m.batch, m.tokens, m.hidden, m.table
    extract = [f"      %v = tensor.extract %{table}[%row, %col] : tensor<{rows}x{h}x{dt}>"]
    if dt != "f32":
        extract += [f"      %vf = arith.extf %v : {dt} to f32", "      linalg.yield %vf : f32"]
    else:
        extract += ["      linalg.yield %v : f32"]
    return [
        f"    %{result}_empty = tensor.empty() : tensor<{b}x{s}x{h}xf32>",
        f'    %{result} = linalg.generic {{doc = "embedding", indexing_maps = [affine_map<(b, s, h) -> (b, s)>, {MAP3}], iterator_types = ["parallel", "parallel", "parallel"]}} ins(%{ids} : tensor<{b}x{s}xi64>) outs(%{result}_empty : tensor<{b}x{s}x{h}xf32>) {{',
        "    ^bb0(%id: i64, %o: f32):",
        *row,
        "      %col = linalg.index 2 : index",
        *extract,
        f"    }} -> tensor<{b}x{s}x{h}xf32>",
    ]


def whole_model(m: Model) -> str:
    """The unsharded step program of ``m`` (ports: ``input_ids``, ``position``, the weights;
    results: ``next_ids`` and, with ``logits``, the last position's logits)."""
    b, s, h, v, i, dt = m.batch, m.tokens, m.hidden, m.vocab, m.inner, m.table
    args = [
        f'%input_ids: tensor<{b}x{s}xi64> {{tp.name = "input_ids", tp.role = "input"}}',
        '%position: i64 {tp.name = "position", tp.role = "input"}',
        f'%embed: tensor<{v}x{h}x{dt}> {{tp.name = "{m.embed_name}", tp.role = "weight"}}',
    ]
    body: list[str] = []
    body += _gather(
        "embedded",
        "embed",
        str(v),
        m,
        "input_ids",
        ["      %row = arith.index_cast %id : i64 to index"],
    )
    x = "embedded"
    if m.gpt2:
        args.append(
            f'%wpe: tensor<{m.positions}x{h}xf32> {{tp.name = "transformer.wpe.weight", tp.role = "weight"}}'
        )
        row = [
            "      %p = arith.index_cast %position : i64 to index",
            "      %si = linalg.index 1 : index",
            "      %row = arith.addi %p, %si : index",
        ]
        body += _gather(
            "placed",
            "wpe",
            str(m.positions),
            Model(**{**m.__dict__, "table": "f32"}),
            "input_ids",
            row,
        )
        body.append(f"    %x0 = arith.addf %embedded, %placed : tensor<{b}x{s}x{h}xf32>")
        x = "x0"
    body += [
        "    %zero = arith.constant 0.0 : f32",
    ]
    if m.mlp:
        args += [
            f'%up: tensor<{i}x{h}xf32> {{tp.name = "{m.layer("up_proj.weight")}", tp.role = "weight"}}',
            f'%down: tensor<{h}x{i}xf32> {{tp.name = "{m.layer("down_proj.weight")}", tp.role = "weight"}}',
        ]
        body += [
            f"    %ei = tensor.empty() : tensor<{b}x{s}x{i}xf32>",
            f"    %zi = linalg.fill ins(%zero : f32) outs(%ei : tensor<{b}x{s}x{i}xf32>) -> tensor<{b}x{s}x{i}xf32>",
            f'    %hid = linalg.generic {{indexing_maps = {MATMUL3}, iterator_types = ["parallel", "parallel", "parallel", "reduction"]}} ins(%{x}, %up : tensor<{b}x{s}x{h}xf32>, tensor<{i}x{h}xf32>) outs(%zi : tensor<{b}x{s}x{i}xf32>) {{',
            PRODUCT,
            f"    }} -> tensor<{b}x{s}x{i}xf32>",
            f'    %act = linalg.generic {{indexing_maps = [{MAP3}, {MAP3}], iterator_types = ["parallel", "parallel", "parallel"]}} ins(%hid : tensor<{b}x{s}x{i}xf32>) outs(%ei : tensor<{b}x{s}x{i}xf32>) {{',
            "    ^bb0(%a: f32, %o: f32):",
            "      %r = arith.maximumf %a, %zero : f32",
            "      linalg.yield %r : f32",
            f"    }} -> tensor<{b}x{s}x{i}xf32>",
            f"    %eh = tensor.empty() : tensor<{b}x{s}x{h}xf32>",
            f"    %zh = linalg.fill ins(%zero : f32) outs(%eh : tensor<{b}x{s}x{h}xf32>) -> tensor<{b}x{s}x{h}xf32>",
            f'    %y = linalg.generic {{indexing_maps = {MATMUL3}, iterator_types = ["parallel", "parallel", "parallel", "reduction"]}} ins(%act, %down : tensor<{b}x{s}x{i}xf32>, tensor<{h}x{i}xf32>) outs(%zh : tensor<{b}x{s}x{h}xf32>) {{',
            PRODUCT,
            f"    }} -> tensor<{b}x{s}x{h}xf32>",
            f"    %x1 = arith.addf %{x}, %y : tensor<{b}x{s}x{h}xf32>",
        ]
        x = "x1"
    norm_name = "transformer.ln_f.weight" if m.gpt2 else "model.norm.weight"
    args.append(f'%norm: tensor<{h}xf32> {{tp.name = "{norm_name}", tp.role = "weight"}}')
    head, head_t = "embed", f"{v}x{h}x{dt}"
    if not m.tied:
        args.append(
            f'%head: tensor<{v}x{h}xf32> {{tp.name = "lm_head.weight", tp.role = "weight"}}'
        )
        head, head_t = "head", f"{v}x{h}xf32"
    widen = (
        [f"      %wf = arith.extf %w : {dt} to f32", "      %m = arith.mulf %a, %wf : f32"]
        if head == "embed" and dt != "f32"
        else ["      %m = arith.mulf %a, %w : f32"]
    )
    w_type = dt if head == "embed" else "f32"
    body += [
        f"    %last = tensor.extract_slice %{x}[0, {s - 1}, 0] [{b}, 1, {h}] [1, 1, 1] : tensor<{b}x{s}x{h}xf32> to tensor<{b}x{h}xf32>",
        f"    %e1 = tensor.empty() : tensor<{b}xf32>",
        f"    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<{b}xf32>) -> tensor<{b}xf32>",
        f'    %ss = linalg.generic {{indexing_maps = [affine_map<(b, h) -> (b, h)>, affine_map<(b, h) -> (b)>], iterator_types = ["parallel", "reduction"]}} ins(%last : tensor<{b}x{h}xf32>) outs(%z1 : tensor<{b}xf32>) {{',
        "    ^bb0(%a: f32, %acc: f32):",
        "      %q = arith.mulf %a, %a : f32",
        "      %t = arith.addf %acc, %q : f32",
        "      linalg.yield %t : f32",
        f"    }} -> tensor<{b}xf32>",
        f"    %nh = arith.constant {float(h)} : f32",
        "    %eps = arith.constant 1.0e-06 : f32",
        f"    %e2 = tensor.empty() : tensor<{b}x{h}xf32>",
        f'    %normed = linalg.generic {{indexing_maps = [affine_map<(b, h) -> (b, h)>, affine_map<(b, h) -> (b)>, affine_map<(b, h) -> (h)>, affine_map<(b, h) -> (b, h)>], iterator_types = ["parallel", "parallel"]}} ins(%last, %ss, %norm : tensor<{b}x{h}xf32>, tensor<{b}xf32>, tensor<{h}xf32>) outs(%e2 : tensor<{b}x{h}xf32>) {{',
        "    ^bb0(%a: f32, %sq: f32, %w: f32, %o: f32):",
        "      %ms = arith.divf %sq, %nh : f32",
        "      %ve = arith.addf %ms, %eps : f32",
        "      %r = math.rsqrt %ve : f32",
        "      %n = arith.mulf %a, %r : f32",
        "      %nw = arith.mulf %n, %w : f32",
        "      linalg.yield %nw : f32",
        f"    }} -> tensor<{b}x{h}xf32>",
        f"    %e3 = tensor.empty() : tensor<{b}x{v}xf32>",
        f"    %z3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<{b}x{v}xf32>) -> tensor<{b}x{v}xf32>",
        f'    %logits = linalg.generic {{indexing_maps = [affine_map<(b, v, h) -> (b, h)>, affine_map<(b, v, h) -> (v, h)>, affine_map<(b, v, h) -> (b, v)>], iterator_types = ["parallel", "parallel", "reduction"]}} ins(%normed, %{head} : tensor<{b}x{h}xf32>, tensor<{head_t}>) outs(%z3 : tensor<{b}x{v}xf32>) {{',
        f"    ^bb0(%a: f32, %w: {w_type}, %acc: f32):",
        *widen,
        "      %t = arith.addf %acc, %m : f32",
        "      linalg.yield %t : f32",
        f"    }} -> tensor<{b}x{v}xf32>",
    ]
    results, returned = [], []
    if m.greedy:
        body += argmax_lines("logits", b, v)
        results.append(f'tensor<{b}xi64> {{tp.name = "next_ids"}}')
        returned.append("%next_ids")
    if m.logits or not m.greedy:
        results.append(f'tensor<{b}x{v}xf32> {{tp.name = "logits"}}')
        returned.append("%logits")
    types = [r.split(" {")[0] for r in results]
    return "\n".join(
        [
            "builtin.module {",
            f"  func.func @{m.entry}({', '.join(args)}) -> ({', '.join(results)}) {{",
            *body,
            f"    func.return {', '.join(returned)} : {', '.join(types)}",
            "  }",
            "}",
            "",
        ]
    )


def argmax_lines(logits: str, b: int, v: int) -> list[str]:
    """The greedy argmax of §1 over ``logits [b, v]``: ``%next_ids`` (and ``%next_max``)."""
    return [
        "    %ninf = arith.constant 0xFF800000 : f32",
        "    %i0 = arith.constant 0 : i64",
        f"    %em = tensor.empty() : tensor<{b}xf32>",
        f"    %minit = linalg.fill ins(%ninf : f32) outs(%em : tensor<{b}xf32>) -> tensor<{b}xf32>",
        f"    %eidx = tensor.empty() : tensor<{b}xi64>",
        f"    %iinit = linalg.fill ins(%i0 : i64) outs(%eidx : tensor<{b}xi64>) -> tensor<{b}xi64>",
        f'    %next_max, %next_ids = linalg.generic {{doc = "argmax", indexing_maps = [affine_map<(b, v) -> (b, v)>, affine_map<(b, v) -> (b)>, affine_map<(b, v) -> (b)>], iterator_types = ["parallel", "reduction"]}} ins(%{logits} : tensor<{b}x{v}xf32>) outs(%minit, %iinit : tensor<{b}xf32>, tensor<{b}xi64>) {{',
        "    ^bb0(%lv: f32, %mv: f32, %iv: i64):",
        "      %j = linalg.index 1 : index",
        "      %g = arith.index_cast %j : index to i64",
        "      %gt = arith.cmpf ogt, %lv, %mv : f32",
        "      %nm = arith.select %gt, %lv, %mv : f32",
        "      %ni = arith.select %gt, %g, %iv : i64",
        "      linalg.yield %nm, %ni : f32, i64",
        f"    }} -> tensor<{b}xf32>, tensor<{b}xi64>",
    ]
