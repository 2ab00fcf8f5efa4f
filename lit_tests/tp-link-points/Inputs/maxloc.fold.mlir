// Generated: tp-opt ../maxloc.mlir --tp-relocate=maxloc=fold --tp-transfers
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @decode(%x: tensor<1x2xf32> {tp.name = "x", tp.role = "input"}, %norm: tensor<2xf32> {tp.name = "model.norm.weight", tp.role = "weight"}, %head: tensor<7x2xf32> {tp.name = "lm_head.weight", tp.role = "weight"}) -> (tensor<1xi64> {tp.name = "next_ids"}) {
    %zero = arith.constant 0.000000e+00 : f32
    %ninf = arith.constant 0xff800000 : f32
    %izero = arith.constant 0 : i64
    %ne = tensor.empty() : tensor<1x2xf32>
    %hn = tp.section "hn" on [0, 1] {
      %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %norm : tensor<1x2xf32>, tensor<2xf32>) outs(%ne : tensor<1x2xf32>) {
      ^bb0(%a: f32, %g: f32, %o: f32):
        %s = arith.mulf %a, %g : f32
        linalg.yield %s : f32
      } -> tensor<1x2xf32>
      tp.yield %0 : tensor<1x2xf32>
    } : tensor<1x2xf32>
    %hw0 = tp.section "hw0" on [0] {
      %1 = tp.shard %head at #tp.slice<axis = 0, ranges = [(0, 4)], full = [7, 2]> : tensor<7x2xf32> -> tensor<4x2xf32, #tp.chip<0>>
      tp.yield %1 : tensor<4x2xf32, #tp.chip<0>>
    } : tensor<4x2xf32, #tp.chip<0>>
    %le0 = tensor.empty() : tensor<1x4xf32, #tp.chip<0>>
    %lz0 = tp.section "lz0" on [0] {
      %2 = linalg.fill ins(%zero : f32) outs(%le0 : tensor<1x4xf32, #tp.chip<0>>) -> tensor<1x4xf32, #tp.chip<0>>
      tp.yield %2 : tensor<1x4xf32, #tp.chip<0>>
    } : tensor<1x4xf32, #tp.chip<0>>
    %logits0 = tp.section "logits0" on [0] {
      %3 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%hn, %hw0 : tensor<1x2xf32>, tensor<4x2xf32, #tp.chip<0>>) outs(%lz0 : tensor<1x4xf32, #tp.chip<0>>) {
      ^bb0(%ea: f32, %eb: f32, %acc: f32):
        %p = arith.mulf %ea, %eb : f32
        %s_1 = arith.addf %acc, %p : f32
        linalg.yield %s_1 : f32
      } -> tensor<1x4xf32, #tp.chip<0>>
      tp.yield %3 : tensor<1x4xf32, #tp.chip<0>>
    } : tensor<1x4xf32, #tp.chip<0>>
    %me0 = tensor.empty() : tensor<1xf32, #tp.chip<0>>
    %mi0 = tp.section "mi0" on [0] {
      %4 = linalg.fill ins(%ninf : f32) outs(%me0 : tensor<1xf32, #tp.chip<0>>) -> tensor<1xf32, #tp.chip<0>>
      tp.yield %4 : tensor<1xf32, #tp.chip<0>>
    } : tensor<1xf32, #tp.chip<0>>
    %ie0 = tensor.empty() : tensor<1xi64, #tp.chip<0>>
    %ii0 = tp.section "ii0" on [0] {
      %5 = linalg.fill ins(%izero : i64) outs(%ie0 : tensor<1xi64, #tp.chip<0>>) -> tensor<1xi64, #tp.chip<0>>
      tp.yield %5 : tensor<1xi64, #tp.chip<0>>
    } : tensor<1xi64, #tp.chip<0>>
    %max0, %ids0 = tp.section "max0" on [0] {
      %6, %7 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"], doc = "argmax"} ins(%logits0 : tensor<1x4xf32, #tp.chip<0>>) outs(%mi0, %ii0 : tensor<1xf32, #tp.chip<0>>, tensor<1xi64, #tp.chip<0>>) {
      ^bb0(%v: f32, %m: f32, %i: i64):
        %j = linalg.index 1 : index
        %g_1 = arith.index_cast %j : index to i64
        %off = arith.constant 0 : i64
        %gg = arith.addi %g_1, %off : i64
        %gt = arith.cmpf ogt, %v, %m : f32
        %nm = arith.select %gt, %v, %m : f32
        %ni = arith.select %gt, %gg, %i : i64
        linalg.yield %nm, %ni : f32, i64
      } -> (tensor<1xf32, #tp.chip<0>>, tensor<1xi64, #tp.chip<0>>)
      tp.yield %6, %7 : tensor<1xf32, #tp.chip<0>>, tensor<1xi64, #tp.chip<0>>
    } : tensor<1xf32, #tp.chip<0>>, tensor<1xi64, #tp.chip<0>>
    %hw1 = tp.section "hw1" on [1] {
      %8 = tp.shard %head at #tp.slice<axis = 0, ranges = [(4, 3)], full = [7, 2]> : tensor<7x2xf32> -> tensor<3x2xf32, #tp.chip<1>>
      tp.yield %8 : tensor<3x2xf32, #tp.chip<1>>
    } : tensor<3x2xf32, #tp.chip<1>>
    %le1 = tensor.empty() : tensor<1x3xf32, #tp.chip<1>>
    %lz1 = tp.section "lz1" on [1] {
      %9 = linalg.fill ins(%zero : f32) outs(%le1 : tensor<1x3xf32, #tp.chip<1>>) -> tensor<1x3xf32, #tp.chip<1>>
      tp.yield %9 : tensor<1x3xf32, #tp.chip<1>>
    } : tensor<1x3xf32, #tp.chip<1>>
    %logits1 = tp.section "logits1" on [1] {
      %10 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%hn, %hw1 : tensor<1x2xf32>, tensor<3x2xf32, #tp.chip<1>>) outs(%lz1 : tensor<1x3xf32, #tp.chip<1>>) {
      ^bb0(%ea_1: f32, %eb_1: f32, %acc_1: f32):
        %p_1 = arith.mulf %ea_1, %eb_1 : f32
        %s_2 = arith.addf %acc_1, %p_1 : f32
        linalg.yield %s_2 : f32
      } -> tensor<1x3xf32, #tp.chip<1>>
      tp.yield %10 : tensor<1x3xf32, #tp.chip<1>>
    } : tensor<1x3xf32, #tp.chip<1>>
    %me1 = tensor.empty() : tensor<1xf32, #tp.chip<1>>
    %mi1 = tp.section "mi1" on [1] {
      %11 = linalg.fill ins(%ninf : f32) outs(%me1 : tensor<1xf32, #tp.chip<1>>) -> tensor<1xf32, #tp.chip<1>>
      tp.yield %11 : tensor<1xf32, #tp.chip<1>>
    } : tensor<1xf32, #tp.chip<1>>
    %ie1 = tensor.empty() : tensor<1xi64, #tp.chip<1>>
    %ii1 = tp.section "ii1" on [1] {
      %12 = linalg.fill ins(%izero : i64) outs(%ie1 : tensor<1xi64, #tp.chip<1>>) -> tensor<1xi64, #tp.chip<1>>
      tp.yield %12 : tensor<1xi64, #tp.chip<1>>
    } : tensor<1xi64, #tp.chip<1>>
    %max1, %ids1 = tp.section "max1" on [1] {
      %13, %14 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"], doc = "argmax"} ins(%logits1 : tensor<1x3xf32, #tp.chip<1>>) outs(%mi1, %ii1 : tensor<1xf32, #tp.chip<1>>, tensor<1xi64, #tp.chip<1>>) {
      ^bb0(%v_1: f32, %m_1: f32, %i_1: i64):
        %j_1 = linalg.index 1 : index
        %g_2 = arith.index_cast %j_1 : index to i64
        %off_1 = arith.constant 4 : i64
        %gg_1 = arith.addi %g_2, %off_1 : i64
        %gt_1 = arith.cmpf ogt, %v_1, %m_1 : f32
        %nm_1 = arith.select %gt_1, %v_1, %m_1 : f32
        %ni_1 = arith.select %gt_1, %gg_1, %i_1 : i64
        linalg.yield %nm_1, %ni_1 : f32, i64
      } -> (tensor<1xf32, #tp.chip<1>>, tensor<1xi64, #tp.chip<1>>)
      tp.yield %13, %14 : tensor<1xf32, #tp.chip<1>>, tensor<1xi64, #tp.chip<1>>
    } : tensor<1xf32, #tp.chip<1>>, tensor<1xi64, #tp.chip<1>>
    tp.transfer %max1 from 1 to 0 : tensor<1xf32, #tp.chip<1>>
    tp.transfer %ids1 from 1 to 0 : tensor<1xi64, #tp.chip<1>>
    %best, %next_ids = tp.section "best" on [0, 1] {
      %15, %16 = tp.maxloc %max0, %max1 indices %ids0, %ids1 algorithm "fold" : tensor<1xf32, #tp.chip<0>>, tensor<1xf32, #tp.chip<1>> indices tensor<1xi64, #tp.chip<0>>, tensor<1xi64, #tp.chip<1>> -> tensor<1xf32>, tensor<1xi64>
      tp.yield %15, %16 : tensor<1xf32>, tensor<1xi64>
    } : tensor<1xf32>, tensor<1xi64>
    tp.transfer %next_ids from 0 to 1 : tensor<1xi64>
    %twice = tp.section "twice" on [0, 1] {
      %17 = arith.addi %next_ids, %next_ids : tensor<1xi64>
      tp.yield %17 : tensor<1xi64>
    } : tensor<1xi64>
    func.return %twice : tensor<1xi64>
  }
}

