// tp-link-points carries a maxloc into per-chip programs: fold runs it on chip 0 alone (chip
// 1 sends its pair and, where the spine reads the token on every chip, receives the result
// back at the same halt); oneshot runs it on every chip, each receiving the other's pair.
// RUN: tp-opt %S/Inputs/maxloc.fold.mlir --tp-link-points | filecheck %s --check-prefix=FOLD
// RUN: tp-opt %S/Inputs/maxloc.oneshot.mlir --tp-link-points | filecheck %s --check-prefix=ONESHOT

// FOLD-LABEL: tp.chip_program on 0
// FOLD:      %max1, %ids1 = tp.link 1 sends() as [] receives ["max1", "ids1"]
// FOLD:      tp.maxloc %max0, %max1 indices %ids0, %ids1 algorithm "fold"
// FOLD:      tp.link 2 sends(%next_ids) as ["next_ids"] receives []
// FOLD-LABEL: tp.chip_program on 1
// FOLD-NOT:  tp.maxloc
// FOLD:      %next_ids = tp.link 1 sends(%max1, %ids1) as ["max1", "ids1"] receives ["next_ids"]
// FOLD-NOT:  tp.maxloc
// FOLD:      func.return
// ONESHOT-LABEL: tp.chip_program on 0
// ONESHOT:   %max1, %ids1 = tp.link 1 sends(%max0, %ids0) as ["max0", "ids0"] receives ["max1", "ids1"]
// ONESHOT:   tp.maxloc %max0, %max1 indices %ids0, %ids1 algorithm "oneshot"
// ONESHOT-LABEL: tp.chip_program on 1
// ONESHOT:   %max0, %ids0 = tp.link 1 sends(%max1, %ids1) as ["max1", "ids1"] receives ["max0", "ids0"]
// ONESHOT:   tp.maxloc %max0, %max1 indices %ids0, %ids1 algorithm "oneshot"
// ONESHOT-NOT: tp.link
// ONESHOT:   func.return
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @decode(%x: tensor<1x2xf32> {tp.name = "x", tp.role = "input"}, %norm: tensor<2xf32> {tp.name = "model.norm.weight", tp.role = "weight"}, %head: tensor<7x2xf32> {tp.name = "lm_head.weight", tp.role = "weight"})
      -> (tensor<1xi64> {tp.name = "next_ids"}) {
    %zero = arith.constant 0.0 : f32
    %ninf = arith.constant 0xFF800000 : f32
    %izero = arith.constant 0 : i64
    %ne = tensor.empty() : tensor<1x2xf32>
    %hn = linalg.generic {indexing_maps = [affine_map<(b, i) -> (b, i)>, affine_map<(b, i) -> (i)>, affine_map<(b, i) -> (b, i)>], iterator_types = ["parallel", "parallel"]}
        ins(%x, %norm : tensor<1x2xf32>, tensor<2xf32>) outs(%ne : tensor<1x2xf32>) {
    ^bb0(%a: f32, %g: f32, %o: f32):
      %s = arith.mulf %a, %g : f32
      linalg.yield %s : f32
    } -> tensor<1x2xf32>
    %hw0 = tp.shard %head at #tp.slice<axis = 0, ranges = [(0, 4)], full = [7, 2]> : tensor<7x2xf32> -> tensor<4x2xf32, #tp.chip<0>>
    %le0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %lz0 = linalg.fill ins(%zero : f32) outs(%le0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
    %logits0 = linalg.generic {indexing_maps = [affine_map<(b, o, i) -> (b, i)>, affine_map<(b, o, i) -> (o, i)>, affine_map<(b, o, i) -> (b, o)>],
        iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%hn, %hw0 : tensor<1x2xf32>, tensor<4x2xf32, #tp.chip<0>>) outs(%lz0 : tensor<1x4xf32, #tp.chip<0>>) {
    ^bb0(%ea: f32, %eb: f32, %acc: f32):
      %p = arith.mulf %ea, %eb : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
    } -> tensor<1x4xf32, #tp.chip<0>>
    %me0 = tensor.empty() : tensor<1xf32, #tp.chip<0>>
    %mi0 = linalg.fill ins(%ninf : f32) outs(%me0 : tensor<1xf32, #tp.chip<0>>) -> tensor<1xf32, #tp.chip<0>>
    %ie0 = tensor.empty() : tensor<1xi64, #tp.chip<0>>
    %ii0 = linalg.fill ins(%izero : i64) outs(%ie0 : tensor<1xi64, #tp.chip<0>>) -> tensor<1xi64, #tp.chip<0>>
    %max0, %ids0 = linalg.generic {doc = "argmax", indexing_maps = [affine_map<(b, v) -> (b, v)>, affine_map<(b, v) -> (b)>, affine_map<(b, v) -> (b)>], iterator_types = ["parallel", "reduction"]}
        ins(%logits0 : tensor<1x4xf32, #tp.chip<0>>) outs(%mi0, %ii0 : tensor<1xf32, #tp.chip<0>>, tensor<1xi64, #tp.chip<0>>) {
    ^bb0(%v: f32, %m: f32, %i: i64):
      %j = linalg.index 1 : index
      %g = arith.index_cast %j : index to i64
      %off = arith.constant 0 : i64
      %gg = arith.addi %g, %off : i64
      %gt = arith.cmpf ogt, %v, %m : f32
      %nm = arith.select %gt, %v, %m : f32
      %ni = arith.select %gt, %gg, %i : i64
      linalg.yield %nm, %ni : f32, i64
    } -> tensor<1xf32, #tp.chip<0>>, tensor<1xi64, #tp.chip<0>>
    %hw1 = tp.shard %head at #tp.slice<axis = 0, ranges = [(4, 3)], full = [7, 2]> : tensor<7x2xf32> -> tensor<3x2xf32, #tp.chip<1>>
    %le1 = tensor.empty() : tensor<1x3xf32, #tp.chip<1>>
    %lz1 = linalg.fill ins(%zero : f32) outs(%le1 : tensor<1x3xf32, #tp.chip<1>>) -> tensor<1x3xf32, #tp.chip<1>>
    %logits1 = linalg.generic {indexing_maps = [affine_map<(b, o, i) -> (b, i)>, affine_map<(b, o, i) -> (o, i)>, affine_map<(b, o, i) -> (b, o)>],
        iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%hn, %hw1 : tensor<1x2xf32>, tensor<3x2xf32, #tp.chip<1>>) outs(%lz1 : tensor<1x3xf32, #tp.chip<1>>) {
    ^bb0(%ea: f32, %eb: f32, %acc: f32):
      %p = arith.mulf %ea, %eb : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
    } -> tensor<1x3xf32, #tp.chip<1>>
    %me1 = tensor.empty() : tensor<1xf32, #tp.chip<1>>
    %mi1 = linalg.fill ins(%ninf : f32) outs(%me1 : tensor<1xf32, #tp.chip<1>>) -> tensor<1xf32, #tp.chip<1>>
    %ie1 = tensor.empty() : tensor<1xi64, #tp.chip<1>>
    %ii1 = linalg.fill ins(%izero : i64) outs(%ie1 : tensor<1xi64, #tp.chip<1>>) -> tensor<1xi64, #tp.chip<1>>
    %max1, %ids1 = linalg.generic {doc = "argmax", indexing_maps = [affine_map<(b, v) -> (b, v)>, affine_map<(b, v) -> (b)>, affine_map<(b, v) -> (b)>], iterator_types = ["parallel", "reduction"]}
        ins(%logits1 : tensor<1x3xf32, #tp.chip<1>>) outs(%mi1, %ii1 : tensor<1xf32, #tp.chip<1>>, tensor<1xi64, #tp.chip<1>>) {
    ^bb0(%v: f32, %m: f32, %i: i64):
      %j = linalg.index 1 : index
      %g = arith.index_cast %j : index to i64
      %off = arith.constant 4 : i64
      %gg = arith.addi %g, %off : i64
      %gt = arith.cmpf ogt, %v, %m : f32
      %nm = arith.select %gt, %v, %m : f32
      %ni = arith.select %gt, %gg, %i : i64
      linalg.yield %nm, %ni : f32, i64
    } -> tensor<1xf32, #tp.chip<1>>, tensor<1xi64, #tp.chip<1>>
    %best, %next_ids = tp.maxloc %max0, %max1 indices %ids0, %ids1 : tensor<1xf32, #tp.chip<0>>, tensor<1xf32, #tp.chip<1>> indices tensor<1xi64, #tp.chip<0>>, tensor<1xi64, #tp.chip<1>> -> tensor<1xf32>, tensor<1xi64>
    %twice = arith.addi %next_ids, %next_ids : tensor<1xi64>
    func.return %twice : tensor<1xi64>
  }
}

