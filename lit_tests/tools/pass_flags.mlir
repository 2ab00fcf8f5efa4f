// tp-opt takes mlir-opt style pass flags, run in the order given after any -p pipeline,
// and keeps every xdsl-opt flag.
// RUN: tp-opt %s --canonicalize | filecheck %s --check-prefix=FOLDED
// RUN: tp-opt %s -p canonicalize | filecheck %s --check-prefix=FOLDED
// RUN: tp-opt %s --print-between-passes --cse --canonicalize | filecheck %s --check-prefix=ORDER
// RUN: tp-opt %s -p cse --canonicalize --print-between-passes | filecheck %s --check-prefix=ORDER

// FOLDED-LABEL: func.func @fold
// FOLDED-NEXT: %c = arith.constant 3 : i64
// FOLDED-NEXT: %d = arith.constant 3 : i64
// FOLDED-NEXT: func.return %c, %d : i64, i64

// ORDER: IR after cse:
// ORDER: %c = arith.addi %a, %b : i64
// ORDER-NEXT: func.return %c, %c : i64, i64
// ORDER-NOT: IR after
// ORDER: %c = arith.constant 3 : i64
// ORDER-NEXT: func.return %c, %c : i64, i64


func.func @fold() -> (i64, i64) {
  %a = arith.constant 1 : i64
  %b = arith.constant 2 : i64
  %c = arith.addi %a, %b : i64
  %d = arith.addi %a, %b : i64
  func.return %c, %d : i64, i64
}
