// Bad input is a located one-line error with the offending line and a caret, exit
// status non-zero (pytest checks it is exactly 1), never a Python traceback.
// RUN: not tp-opt %S/Inputs/syntax_error.mlir 2>&1 | filecheck %s --check-prefix=SYNTAX
// RUN: not tp-opt %S/Inputs/unknown_op.mlir 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not tp-opt %S/Inputs/bad_chip.mlir 2>&1 | filecheck %s --check-prefix=CHIP
// RUN: not tp-opt %S/Inputs/bad_slice.mlir 2>&1 | filecheck %s --check-prefix=SLICE
// RUN: not tp-opt %S/Inputs/does_not_exist.mlir 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not tp-opt %s --tp-no-such-pass 2>&1 | filecheck %s --check-prefix=FLAG
// RUN: not tp-opt %s --tp-relo 2>&1 | filecheck %s --check-prefix=ABBREV
// RUN: not tp-opt %s --tp-relocate=allreduce=ring --tp-phas 2>&1 | filecheck %s --check-prefix=TYPO
// RUN: not tp-opt %s -p tp-no-such-pass 2>&1 | filecheck %s --check-prefix=PIPELINE
// RUN: not tp-opt %s --canonicalize=no-such-option=1 2>&1 | filecheck %s --check-prefix=OPTION

// SYNTAX-LABEL: syntax_error.mlir:3:25: error: operand expected
// SYNTAX-NEXT: {{^}}    %b = arith.addf %a, : tensor<4xf32>
// SYNTAX-NEXT: {{^}}                        ^
// SYNTAX-NOT: Traceback

// UNKNOWN-LABEL: unknown_op.mlir:3:5: error: Operation tp.frobnicate is not registered
// UNKNOWN-NEXT: %b = tp.frobnicate %a : tensor<4xf32>
// UNKNOWN-NOT: Traceback

// CHIP-LABEL: bad_chip.mlir:3:5: error: 'tensor.empty' result #0 is on chip 3, but the module has 2 chips (0..1)
// CHIP-NEXT: {{^}}    %e = tensor.empty() : tensor<4xf32, #tp.chip<3>>
// CHIP-NEXT: {{^}}    ^{{$}}
// CHIP-NOT: Traceback

// SLICE-LABEL: bad_slice.mlir:3:34: error: #tp.slice: range (6, 4) is out of bounds for axis 0 of size 8
// SLICE-NEXT: %a = tp.shard %w at #tp.slice<axis = 0, ranges = [(6, 4)], full = [8, 4]>
// SLICE-NOT: Traceback

// MISSING: tp-opt: error: cannot read input '{{.*}}does_not_exist.mlir': No such file or directory
// MISSING-NOT: Traceback

// An unknown flag is one line (no usage block), naming the flag it most likely misspells;
// an abbreviation of a flag is not that flag.
// FLAG: tp-opt: error: unknown flag --tp-no-such-pass{{$}}
// FLAG-NOT: {{.}}
// ABBREV: tp-opt: error: unknown flag --tp-relo (did you mean --tp-relocate?){{$}}
// ABBREV-NOT: {{.}}
// TYPO: tp-opt: error: unknown flag --tp-phas (did you mean --tp-phase?){{$}}
// TYPO-NOT: {{.}}

// PIPELINE: tp-opt: error: bad pass pipeline 'tp-no-such-pass': Unrecognized passes: ['tp-no-such-pass']
// PIPELINE-NOT: Traceback

// OPTION: tp-opt: error: bad pass pipeline 'canonicalize{no-such-option=1}'
// OPTION-NOT: Traceback

builtin.module {}
