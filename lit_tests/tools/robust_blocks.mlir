// A function, or a region inside it, of several blocks (a branch): every tp pass that reads
// regions as one block of statements refuses it up front, located at the branch, instead of
// failing inside the pass (an internal error before); tp-verify refuses it as opaque, and
// the passes that do not care (tp-raise-allreduce, tp-legalize) leave it as it is.
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-verify | filecheck %s --check-prefix=VERIFY
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-raise-allreduce | filecheck %s --check-prefix=KEEP
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-legalize | filecheck %s --check-prefix=KEEP
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-fuse | filecheck %s --check-prefix=FUSE
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-relocate | filecheck %s --check-prefix=RELOCATE
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-transfers | filecheck %s --check-prefix=TRANSFERS
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-phase | filecheck %s --check-prefix=PHASE
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-link-points | filecheck %s --check-prefix=LINK
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-relay | filecheck %s --check-prefix=RELAY
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-split="chips=2 plan=qwen3" | filecheck %s --check-prefix=SPLIT

// VERIFY-LABEL: error: 'cf.br' branches between blocks, which placements do not follow: the shard obligation cannot be checked through it [opaque-op]
// VERIFY-NEXT: cf.br ^bb1
// KEEP-LABEL: func.func @two_blocks
// KEEP:         cf.br ^bb1
// KEEP:       ^bb1:
// FUSE-LABEL: error: 'cf.br' ends block 1 of 2 in a region of 'func.func': tp-fuse reads each region as one block of statements and does not follow branches [opaque-op]
// FUSE-NEXT:  cf.br ^bb1
// RELOCATE-LABEL: error: 'cf.br' ends block 1 of 2 in a region of 'func.func': tp-relocate reads each region
// TRANSFERS-LABEL: error: 'cf.br' ends block 1 of 2 in a region of 'func.func': tp-transfers reads each region
// PHASE-LABEL: error: 'cf.br' ends block 1 of 2 in a region of 'func.func': tp-phase reads each region
// LINK-LABEL: error: 'cf.br' ends block 1 of 2 in a region of 'func.func': tp-link-points reads each region
// RELAY-LABEL: error: 'cf.br' ends block 1 of 2 in a region of 'func.func': tp-relay reads each region
// SPLIT-LABEL: error: 'cf.br' ends block 1 of 2 in a region of 'func.func': tp-split reads each region
func.func @two_blocks(%a: tensor<4xf32>) -> tensor<4xf32> {
  %s = arith.addf %a, %a : tensor<4xf32>
  cf.br ^bb1
^bb1:
  func.return %s : tensor<4xf32>
}

// -----
// VERIFY-LABEL: error: 'cf.br' branches between blocks
// KEEP-LABEL: func.func @nested_blocks
// KEEP:         scf.execute_region
// KEEP-NEXT:      cf.br ^bb1
// FUSE-LABEL: error: 'cf.br' ends block 1 of 2 in a region of 'scf.execute_region': tp-fuse reads each region
// RELOCATE-LABEL: error: 'cf.br' ends block 1 of 2 in a region of 'scf.execute_region': tp-relocate reads each region
// TRANSFERS-LABEL: error: 'cf.br' ends block 1 of 2 in a region of 'scf.execute_region': tp-transfers reads each region
// PHASE-LABEL: error: 'cf.br' ends block 1 of 2 in a region of 'scf.execute_region': tp-phase reads each region
// LINK-LABEL: error: 'cf.br' ends block 1 of 2 in a region of 'scf.execute_region': tp-link-points reads each region
// RELAY-LABEL: error: 'cf.br' ends block 1 of 2 in a region of 'scf.execute_region': tp-relay reads each region
// SPLIT-LABEL: error: 'cf.br' ends block 1 of 2 in a region of 'scf.execute_region': tp-split reads each region
func.func @nested_blocks(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = scf.execute_region -> (tensor<4xf32>) {
    cf.br ^bb1
  ^bb1:
    %s = arith.addf %a, %a : tensor<4xf32>
    scf.yield %s : tensor<4xf32>
  }
  func.return %r : tensor<4xf32>
}
