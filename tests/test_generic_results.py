"""A linalg.generic of several results (the greedy head's argmax) reads back as printed:
xDSL prints ``-> (t1, t2)``, and tp's tools parse it (`tp_dialect.generic_results`)."""

from __future__ import annotations

from io import StringIO

from xdsl.dialects.linalg.ops import GenericOp
from xdsl.printer import Printer

from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context

ARGMAX = """func.func @f(%l: tensor<2x8xf32>, %m0: tensor<2xf32>, %i0: tensor<2xi64>)
    -> tensor<2xi64> {
  %m, %i = linalg.generic {doc = "argmax", indexing_maps = [affine_map<(b, v) -> (b, v)>,
      affine_map<(b, v) -> (b)>, affine_map<(b, v) -> (b)>],
      iterator_types = ["parallel", "reduction"]}
      ins(%l : tensor<2x8xf32>) outs(%m0, %i0 : tensor<2xf32>, tensor<2xi64>) {
  ^bb0(%x: f32, %mx: f32, %ix: i64):
    %j = linalg.index 1 : index
    %g = arith.index_cast %j : index to i64
    %gt = arith.cmpf ogt, %x, %mx : f32
    %nm = arith.select %gt, %x, %mx : f32
    %ni = arith.select %gt, %g, %ix : i64
    linalg.yield %nm, %ni : f32, i64
  } -> SPELLING
  func.return %i : tensor<2xi64>
}"""


def printed(text: str) -> str:
    module, _ = parse_module(tp_context(), text, "<t>")
    out = StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue()


def test_several_results_read_back_as_printed() -> None:
    bare = printed(ARGMAX.replace("SPELLING", "tensor<2xf32>, tensor<2xi64>"))
    assert "-> (tensor<2xf32>, tensor<2xi64>)" in bare  # how xDSL prints them
    again = printed(bare)
    assert again == bare
    parens = printed(ARGMAX.replace("SPELLING", "(tensor<2xf32>, tensor<2xi64>)"))
    assert parens == bare


def test_one_result_and_the_parser_are_unchanged() -> None:
    text = ARGMAX.replace("SPELLING", "tensor<2xf32>, tensor<2xi64>")
    module, _ = parse_module(tp_context(), text, "<t>")
    generic = next(op for op in module.walk() if isinstance(op, GenericOp))
    assert [str(r.type) for r in generic.results] == ["tensor<2xf32>", "tensor<2xi64>"]
