// xDSL's targets other than MLIR emit only IR of their own dialects: on a tp program they
// crashed (x86-asm, riscv-asm, arm-asm: an AssertionError; llvm: llvmlite missing; mps: not
// implemented) or printed nothing (csl, wat, wgsl). tp-opt refuses a tp program for each,
// naming what tp emits, and a target failing on any other module is one line too.
// RUN: not tp-opt %s -t x86-asm 2>&1 | filecheck %s --check-prefix=X86
// RUN: not tp-opt %s --tp-relocate -t riscv-asm 2>&1 | filecheck %s --check-prefix=RISCV
// RUN: not tp-opt %s -t arm-asm 2>&1 | filecheck %s --check-prefix=ARM
// RUN: not tp-opt %s -t llvm 2>&1 | filecheck %s --check-prefix=LLVM
// RUN: not tp-opt %s -t mps 2>&1 | filecheck %s --check-prefix=MPS
// RUN: not tp-opt %s -t csl 2>&1 | filecheck %s --check-prefix=CSL
// RUN: not tp-opt %s -t wat 2>&1 | filecheck %s --check-prefix=WAT
// RUN: not tp-opt %s -t wgsl 2>&1 | filecheck %s --check-prefix=WGSL
// RUN: tp-opt %s -t mlir | filecheck %s --check-prefix=MLIR
// RUN: not tp-opt %S/Inputs/plain_func.mlir -t riscv-asm 2>&1 | filecheck %s --check-prefix=PLAIN

// X86: tp-opt: error: -t x86-asm: xDSL's x86-asm target cannot emit tp programs (it emits only IR of its own dialects); tp emits MLIR (-t mlir, the default): tp-run runs it, tp-opt lowers it{{$}}
// X86-NOT: {{.}}
// RISCV: tp-opt: error: -t riscv-asm: xDSL's riscv-asm target cannot emit tp programs{{.*}}(-t mlir, the default){{.*$}}
// RISCV-NOT: {{.}}
// ARM: tp-opt: error: -t arm-asm: xDSL's arm-asm target cannot emit tp programs{{.*}}(-t mlir, the default){{.*$}}
// ARM-NOT: {{.}}
// LLVM: tp-opt: error: -t llvm: xDSL's llvm target cannot emit tp programs{{.*}}(-t mlir, the default){{.*$}}
// LLVM-NOT: {{.}}
// MPS: tp-opt: error: -t mps: xDSL's mps target cannot emit tp programs{{.*}}(-t mlir, the default){{.*$}}
// MPS-NOT: {{.}}
// CSL: tp-opt: error: -t csl: xDSL's csl target cannot emit tp programs{{.*}}(-t mlir, the default){{.*$}}
// CSL-NOT: {{.}}
// WAT: tp-opt: error: -t wat: xDSL's wat target cannot emit tp programs{{.*}}(-t mlir, the default){{.*$}}
// WAT-NOT: {{.}}
// WGSL: tp-opt: error: -t wgsl: xDSL's wgsl target cannot emit tp programs{{.*}}(-t mlir, the default){{.*$}}
// WGSL-NOT: {{.}}
// MLIR: builtin.module attributes {tp.chips = 2 : i64}
// PLAIN: tp-opt: error: -t riscv-asm: xDSL's riscv-asm target cannot emit this module (AssertionError); tp emits MLIR (-t mlir, the default): tp-run runs it, tp-opt lowers it{{$}}
// PLAIN-NOT: {{.}}

builtin.module attributes {tp.chips = 2 : i64} {
  func.func @decode(%x: tensor<4xf32>) -> tensor<4xf32> {
    func.return %x : tensor<4xf32>
  }
}
