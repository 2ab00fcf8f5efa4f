// tp-split's options, refused in one line before the program is touched: chips= from 1 to
// MAX_LOWERED_CHIPS (1024: the split writes each cut op once per chip, as the lowering passes
// write a replicated statement), and a plan.
// RUN: not tp-opt %s --tp-split="chips=1025 plan=%S/Inputs/mlp.json" 2>&1 | filecheck %s --check-prefix=ABOVE
// RUN: not tp-opt %s --tp-split="chips=0 plan=%S/Inputs/mlp.json" 2>&1 | filecheck %s --check-prefix=ZERO
// RUN: not tp-opt %s --tp-split="chips=2" 2>&1 | filecheck %s --check-prefix=NOPLAN

// ABOVE: error: tp-split: chips=1025 is not from 1 to 1024
// ZERO: error: tp-split: chips=0 is not from 1 to 1024
// NOPLAN: error: tp-split: plan= is required (a JSON file, hf, or a shipped plan: {{.*}})
builtin.module {
  func.func @decode(%x: tensor<1x4xf32> {tp.name = "x", tp.role = "input"}) -> tensor<1x4xf32> {
    func.return %x : tensor<1x4xf32>
  }
}
