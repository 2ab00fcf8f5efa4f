// allreduce=auto counts the ring among its candidates where tp-transfers can spell it out
// (an axis of N elements): on a ring of links (the generic preset) a 4 MiB all-reduce over 8
// chips moves least as a ring — its reduce-scatter sends 1/N of the tensor to the next chip
// only, no link shared, where a two-shot's crosses the ring N-1 ways at once — and its cost is
// what the spelled-out ring's transfers take in the dataflow model (tests/test_links.py).
// RUN: tp-opt %s --tp-relocate="allreduce=auto machine=generic report=true" --tp-transfers 2>&1 | filecheck %s

// CHECK: tp-relocate: all-reduce %s (4096.0 KiB, 8 chips, generic): fold {{[0-9.]+}} us, oneshot {{[0-9.]+}} us, twoshot 431.{{[0-9]+}} us, ring 376.{{[0-9]+}} us -> ring
// CHECK-LABEL: func.func @sum8
// Slice 3 starts on chip 4 and ends on chip 3: chips 4, 5, 6, 7, 0, 1, 2, 3.
// CHECK:      tp.transfer %s_p4s3 from 4 to 5
// CHECK-NEXT: %s_rs3t1 = tp.section "s.rs3.t1" on [5] {
// CHECK-NEXT:   linalg.add ins(%s_p4s3, %s_p5s3
// CHECK:      tp.transfer %s_rs3t6 from 2 to 3
// CHECK-NEXT: %s_rs3 = tp.section "s.rs3" on [3] {
// CHECK-NEXT:   linalg.add ins(%s_rs3t6, %s_p3s3
// CHECK:      %s = tp.section "s" on [0, 1, 2, 3, 4, 5, 6, 7] {
// CHECK-NEXT:   tensor.concat dim(1) %s_rs0, %s_rs1, %s_rs2, %s_rs3, %s_rs4, %s_rs5, %s_rs6, %s_rs7
// CHECK-NOT:  tp.allreduce
builtin.module attributes {tp.chips = 8 : i64} {
  func.func @sum8(%p0: tensor<1x1048576xf32, #tp.chip<0>>, %p1: tensor<1x1048576xf32, #tp.chip<1>>, %p2: tensor<1x1048576xf32, #tp.chip<2>>, %p3: tensor<1x1048576xf32, #tp.chip<3>>, %p4: tensor<1x1048576xf32, #tp.chip<4>>, %p5: tensor<1x1048576xf32, #tp.chip<5>>, %p6: tensor<1x1048576xf32, #tp.chip<6>>, %p7: tensor<1x1048576xf32, #tp.chip<7>>) -> tensor<1x1048576xf32> {
    %s = tp.allreduce %p0, %p1, %p2, %p3, %p4, %p5, %p6, %p7 : tensor<1x1048576xf32, #tp.chip<0>>, tensor<1x1048576xf32, #tp.chip<1>>, tensor<1x1048576xf32, #tp.chip<2>>, tensor<1x1048576xf32, #tp.chip<3>>, tensor<1x1048576xf32, #tp.chip<4>>, tensor<1x1048576xf32, #tp.chip<5>>, tensor<1x1048576xf32, #tp.chip<6>>, tensor<1x1048576xf32, #tp.chip<7>> -> tensor<1x1048576xf32>
    func.return %s : tensor<1x1048576xf32>
  }
}
