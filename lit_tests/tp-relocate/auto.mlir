// allreduce=auto: each all-reduce gets the algorithm with the least modelled time on the
// machine (among fold, oneshot, twoshot and ring, which per-chip programs can hold: the last
// two once tp-transfers spells them out); report=true prints every candidate's time. A 16 KiB
// decode all-reduce over 4 chips is latency-bound on sn40l (5 us links: oneshot, one latency)
// and bandwidth-bound on slow links (1 GB/s: twoshot moves 1/N of it twice; the ring's N-1
// reduce-scatter steps take longer on all-to-all links); a fixed algorithm is written as
// asked. Where the ring wins (8 chips on a ring of links): ../tp-transfers/ring_auto.mlir.
// RUN: tp-opt %s --tp-relocate="allreduce=auto report=true" 2>&1 | filecheck %s --check-prefix=SN40L
// RUN: tp-opt %s --tp-relocate='allreduce=auto machine="%S/Inputs/slow_links.json" report=true' 2>&1 | filecheck %s --check-prefix=SLOW
// RUN: tp-opt %s --tp-relocate=allreduce=twoshot | filecheck %s --check-prefix=FIXED
// RUN: not tp-opt %s --tp-relocate="allreduce=auto machine=nosuch" 2>&1 | filecheck %s --check-prefix=BADMACHINE

// SN40L: tp-relocate: all-reduce %s (16.0 KiB, 4 chips, sn40l): fold {{.*}} us, oneshot 5.{{[0-9]+}} us, twoshot {{.*}} us, ring {{.*}} us -> oneshot
// SN40L-LABEL: func.func @sum4
// SN40L: tp.allreduce %p0, %p1, %p2, %p3 algorithm "oneshot"
// SLOW: tp-relocate: all-reduce %s (16.0 KiB, 4 chips, slow-links): fold {{.*}} us, oneshot {{.*}} us, twoshot 9.{{[0-9]+}} us, ring 18.{{[0-9]+}} us -> twoshot
// SLOW-LABEL: func.func @sum4
// SLOW: tp.allreduce %p0, %p1, %p2, %p3 algorithm "twoshot"
// FIXED-LABEL: func.func @sum4
// FIXED: tp.allreduce %p0, %p1, %p2, %p3 algorithm "twoshot"
// BADMACHINE: error: tp-relocate: no machine 'nosuch': name a preset (sn40l, generic) or a JSON file
builtin.module attributes {tp.chips = 4 : i64} {
  func.func @sum4(%p0: tensor<1x4096xf32, #tp.chip<0>>, %p1: tensor<1x4096xf32, #tp.chip<1>>, %p2: tensor<1x4096xf32, #tp.chip<2>>, %p3: tensor<1x4096xf32, #tp.chip<3>>) -> tensor<1x4096xf32> {
    %s = tp.allreduce %p0, %p1, %p2, %p3 : tensor<1x4096xf32, #tp.chip<0>>, tensor<1x4096xf32, #tp.chip<1>>, tensor<1x4096xf32, #tp.chip<2>>, tensor<1x4096xf32, #tp.chip<3>> -> tensor<1x4096xf32>
    func.return %s : tensor<1x4096xf32>
  }
}
