// tp-choose-collectives writes each statement-level collective's algorithm: the one asked
// (allreduce=, maxloc=; without maxloc=, the one allreduce= stands for: twoshot -> oneshot,
// ring -> fold), or auto: the least modelled time on the machine (report=true prints every
// candidate's). A 16 KiB all-reduce over 4 chips is latency-bound on sn40l (oneshot: one
// latency); a maxloc whose result only the host reads ties fold and oneshot (ties go to
// fold), one read on every chip must send it back under fold, so oneshot wins. A collective
// already placed in a section is left as it is (tp-relocate runs this pass before placing).
// RUN: tp-opt %s --split-input-file --tp-choose-collectives=allreduce=ring | filecheck %s --check-prefix=RING
// RUN: tp-opt %s --split-input-file --tp-choose-collectives=allreduce=twoshot | filecheck %s --check-prefix=TWOSHOT
// RUN: tp-opt %s --split-input-file --tp-choose-collectives="allreduce=auto maxloc=auto" | filecheck %s --check-prefix=AUTO
// RUN: tp-opt %s --split-input-file --tp-choose-collectives="allreduce=auto maxloc=auto report=true" 2>&1 >/dev/null | filecheck %s --check-prefix=REPORT
// RUN: not tp-opt %s --tp-choose-collectives=allreduce=tree 2>&1 | filecheck %s --check-prefix=BADOPT
// RUN: not tp-opt %s --tp-choose-collectives=maxloc=ring 2>&1 | filecheck %s --check-prefix=BADMAXLOC
// RUN: not tp-opt %s --tp-choose-collectives="allreduce=auto machine=nosuch" 2>&1 | filecheck %s --check-prefix=BADMACHINE

// RING-LABEL: func.func @sum4
// RING: tp.allreduce %p0, %p1, %p2, %p3 algorithm "ring"
// TWOSHOT-LABEL: func.func @sum4
// TWOSHOT: tp.allreduce %p0, %p1, %p2, %p3 algorithm "twoshot"
// REPORT: tp-choose-collectives: all-reduce %s (16.0 KiB, 4 chips, sn40l): fold {{.*}} us, oneshot 5.{{[0-9]+}} us, twoshot {{.*}} us, ring {{.*}} us -> oneshot
// AUTO-LABEL: func.func @sum4
// AUTO: tp.allreduce %p0, %p1, %p2, %p3 algorithm "oneshot"
// BADOPT: error: bad pass pipeline 'tp-choose-collectives{allreduce=tree}': Incompatible types: given ('tree',), expected typing.Literal['fold', 'ring', 'oneshot', 'twoshot', 'auto']
// BADMAXLOC: error: bad pass pipeline 'tp-choose-collectives{maxloc=ring}': {{.*}} expected typing.Optional[typing.Literal['fold', 'oneshot', 'auto']]
// BADMACHINE: error: tp-choose-collectives: no machine 'nosuch': name a preset (sn40l, generic) or a JSON file
builtin.module attributes {tp.chips = 4 : i64} {
  func.func @sum4(%p0: tensor<1x4096xf32, #tp.chip<0>>, %p1: tensor<1x4096xf32, #tp.chip<1>>, %p2: tensor<1x4096xf32, #tp.chip<2>>, %p3: tensor<1x4096xf32, #tp.chip<3>>) -> tensor<1x4096xf32> {
    %s = tp.allreduce %p0, %p1, %p2, %p3 : tensor<1x4096xf32, #tp.chip<0>>, tensor<1x4096xf32, #tp.chip<1>>, tensor<1x4096xf32, #tp.chip<2>>, tensor<1x4096xf32, #tp.chip<3>> -> tensor<1x4096xf32>
    func.return %s : tensor<1x4096xf32>
  }
}

// -----

// RING-LABEL: func.func @host_reads
// RING: tp.maxloc %v0, %v1 indices %i0, %i1 algorithm "fold"
// TWOSHOT-LABEL: func.func @host_reads
// TWOSHOT: tp.maxloc %v0, %v1 indices %i0, %i1 algorithm "oneshot"
// REPORT: tp-choose-collectives: maxloc %ids (12 B a pair, 2 chips, read on chip 0, sn40l): fold 10.00 us, oneshot 10.00 us -> fold
// AUTO-LABEL: func.func @host_reads
// AUTO: tp.maxloc %v0, %v1 indices %i0, %i1 algorithm "fold"
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @host_reads(%v0: tensor<1xf32, #tp.chip<0>>, %v1: tensor<1xf32, #tp.chip<1>>, %i0: tensor<1xi64, #tp.chip<0>>, %i1: tensor<1xi64, #tp.chip<1>>) -> tensor<1xi64> {
    %best, %ids = tp.maxloc %v0, %v1 indices %i0, %i1 : tensor<1xf32, #tp.chip<0>>, tensor<1xf32, #tp.chip<1>> indices tensor<1xi64, #tp.chip<0>>, tensor<1xi64, #tp.chip<1>> -> tensor<1xf32>, tensor<1xi64>
    func.return %ids : tensor<1xi64>
  }
}

// -----

// REPORT: tp-choose-collectives: maxloc %ids (12 B a pair, 2 chips, read on 1 chip(s) besides chip 0, sn40l): fold 20.00 us, oneshot 10.00 us -> oneshot
// AUTO-LABEL: func.func @spine_reads
// AUTO: tp.maxloc %v0, %v1 indices %i0, %i1 algorithm "oneshot"
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @spine_reads(%v0: tensor<1xf32, #tp.chip<0>>, %v1: tensor<1xf32, #tp.chip<1>>, %i0: tensor<1xi64, #tp.chip<0>>, %i1: tensor<1xi64, #tp.chip<1>>) -> tensor<1xi64> {
    %best, %ids = tp.maxloc %v0, %v1 indices %i0, %i1 : tensor<1xf32, #tp.chip<0>>, tensor<1xf32, #tp.chip<1>> indices tensor<1xi64, #tp.chip<0>>, tensor<1xi64, #tp.chip<1>> -> tensor<1xf32>, tensor<1xi64>
    %twice = arith.addi %ids, %ids : tensor<1xi64>
    func.return %twice : tensor<1xi64>
  }
}

// -----

// RING-LABEL: func.func @placed
// RING: tp.allreduce %p0, %p1 algorithm "oneshot"
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @placed(%p0: tensor<1x4xf32, #tp.chip<0>>, %p1: tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32> {
    %s = tp.section "s" on [0, 1] {
      %0 = tp.allreduce %p0, %p1 algorithm "oneshot" : tensor<1x4xf32, #tp.chip<0>>, tensor<1x4xf32, #tp.chip<1>> -> tensor<1x4xf32>
      tp.yield %0 : tensor<1x4xf32>
    } : tensor<1x4xf32>
    func.return %s : tensor<1x4xf32>
  }
}
