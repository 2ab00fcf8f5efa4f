// The maxloc certificate rule (tp_dialect/analysis/certify/maxloc.py, docs/certificate.md): a
// tp.maxloc of per-chip argmaxes is the whole argmax when each pair is one argmax generic's
// two results, over ONE run of the axis with its index offset by the run's start, the runs
// disjoint and covering the axis. A vocab-parallel head (V = 7 on 2 chips: [0, 4), [4, 7)),
// sound first, then one fault per case, each refused naming the chip and the reason.
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-verify | filecheck %s

// CHECK-LABEL: tp.certificate = {checked = "shard-obligation"
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
    func.return %next_ids : tensor<1xi64>
  }
}

// -----
// wrong offset: chip 1 counts its index from 5, its run starts at 4
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
      %off = arith.constant 5 : i64
      %gg = arith.addi %g, %off : i64
      %gt = arith.cmpf ogt, %v, %m : f32
      %nm = arith.select %gt, %v, %m : f32
      %ni = arith.select %gt, %gg, %i : i64
      linalg.yield %nm, %ni : f32, i64
    } -> tensor<1xf32, #tp.chip<1>>, tensor<1xi64, #tp.chip<1>>
// CHECK-LABEL: error: the maxloc takes chip 1's pair from %ids1, whose index is linalg.index + 5, but which picks along axis 1 of %logits1, holding [4, 7) of 7: the index must count from the run's start, 4 [slices-misaligned]
// CHECK-NEXT: %best, %next_ids = tp.maxloc
    %best, %next_ids = tp.maxloc %max0, %max1 indices %ids0, %ids1 : tensor<1xf32, #tp.chip<0>>, tensor<1xf32, #tp.chip<1>> indices tensor<1xi64, #tp.chip<0>>, tensor<1xi64, #tp.chip<1>> -> tensor<1xf32>, tensor<1xi64>
    func.return %next_ids : tensor<1xi64>
  }
}

// -----
// overlapping runs: chip 0 holds [0, 4), chip 1 [3, 7)
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
    %hw1 = tp.shard %head at #tp.slice<axis = 0, ranges = [(3, 4)], full = [7, 2]> : tensor<7x2xf32> -> tensor<4x2xf32, #tp.chip<1>>
    %le1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %lz1 = linalg.fill ins(%zero : f32) outs(%le1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %logits1 = linalg.generic {indexing_maps = [affine_map<(b, o, i) -> (b, i)>, affine_map<(b, o, i) -> (o, i)>, affine_map<(b, o, i) -> (b, o)>],
        iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%hn, %hw1 : tensor<1x2xf32>, tensor<4x2xf32, #tp.chip<1>>) outs(%lz1 : tensor<1x4xf32, #tp.chip<1>>) {
    ^bb0(%ea: f32, %eb: f32, %acc: f32):
      %p = arith.mulf %ea, %eb : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
    } -> tensor<1x4xf32, #tp.chip<1>>
    %me1 = tensor.empty() : tensor<1xf32, #tp.chip<1>>
    %mi1 = linalg.fill ins(%ninf : f32) outs(%me1 : tensor<1xf32, #tp.chip<1>>) -> tensor<1xf32, #tp.chip<1>>
    %ie1 = tensor.empty() : tensor<1xi64, #tp.chip<1>>
    %ii1 = linalg.fill ins(%izero : i64) outs(%ie1 : tensor<1xi64, #tp.chip<1>>) -> tensor<1xi64, #tp.chip<1>>
    %max1, %ids1 = linalg.generic {doc = "argmax", indexing_maps = [affine_map<(b, v) -> (b, v)>, affine_map<(b, v) -> (b)>, affine_map<(b, v) -> (b)>], iterator_types = ["parallel", "reduction"]}
        ins(%logits1 : tensor<1x4xf32, #tp.chip<1>>) outs(%mi1, %ii1 : tensor<1xf32, #tp.chip<1>>, tensor<1xi64, #tp.chip<1>>) {
    ^bb0(%v: f32, %m: f32, %i: i64):
      %j = linalg.index 1 : index
      %g = arith.index_cast %j : index to i64
      %off = arith.constant 3 : i64
      %gg = arith.addi %g, %off : i64
      %gt = arith.cmpf ogt, %v, %m : f32
      %nm = arith.select %gt, %v, %m : f32
      %ni = arith.select %gt, %gg, %i : i64
      linalg.yield %nm, %ni : f32, i64
    } -> tensor<1xf32, #tp.chip<1>>, tensor<1xi64, #tp.chip<1>>
// CHECK-LABEL: error: the maxloc takes argmaxes over runs of an axis of 7 positions (%logits0), and chips 0 and 1 both pick from [3, 4): each chip must pick from its own run of the axis [slices-overlap]
// CHECK-NEXT: %best, %next_ids = tp.maxloc
    %best, %next_ids = tp.maxloc %max0, %max1 indices %ids0, %ids1 : tensor<1xf32, #tp.chip<0>>, tensor<1xf32, #tp.chip<1>> indices tensor<1xi64, #tp.chip<0>>, tensor<1xi64, #tp.chip<1>> -> tensor<1xf32>, tensor<1xi64>
    func.return %next_ids : tensor<1xi64>
  }
}

// -----
// a gap: nobody picks from [3, 4)
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
    %hw0 = tp.shard %head at #tp.slice<axis = 0, ranges = [(0, 3)], full = [7, 2]> : tensor<7x2xf32> -> tensor<3x2xf32, #tp.chip<0>>
    %le0 = tensor.empty() : tensor<1x3xf32, #tp.chip<0>>
    %lz0 = linalg.fill ins(%zero : f32) outs(%le0 : tensor<1x3xf32, #tp.chip<0>>) -> tensor<1x3xf32, #tp.chip<0>>
    %logits0 = linalg.generic {indexing_maps = [affine_map<(b, o, i) -> (b, i)>, affine_map<(b, o, i) -> (o, i)>, affine_map<(b, o, i) -> (b, o)>],
        iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%hn, %hw0 : tensor<1x2xf32>, tensor<3x2xf32, #tp.chip<0>>) outs(%lz0 : tensor<1x3xf32, #tp.chip<0>>) {
    ^bb0(%ea: f32, %eb: f32, %acc: f32):
      %p = arith.mulf %ea, %eb : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
    } -> tensor<1x3xf32, #tp.chip<0>>
    %me0 = tensor.empty() : tensor<1xf32, #tp.chip<0>>
    %mi0 = linalg.fill ins(%ninf : f32) outs(%me0 : tensor<1xf32, #tp.chip<0>>) -> tensor<1xf32, #tp.chip<0>>
    %ie0 = tensor.empty() : tensor<1xi64, #tp.chip<0>>
    %ii0 = linalg.fill ins(%izero : i64) outs(%ie0 : tensor<1xi64, #tp.chip<0>>) -> tensor<1xi64, #tp.chip<0>>
    %max0, %ids0 = linalg.generic {doc = "argmax", indexing_maps = [affine_map<(b, v) -> (b, v)>, affine_map<(b, v) -> (b)>, affine_map<(b, v) -> (b)>], iterator_types = ["parallel", "reduction"]}
        ins(%logits0 : tensor<1x3xf32, #tp.chip<0>>) outs(%mi0, %ii0 : tensor<1xf32, #tp.chip<0>>, tensor<1xi64, #tp.chip<0>>) {
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
// CHECK-LABEL: error: the maxloc takes argmaxes over runs of an axis of 7 positions (%logits0), but no chip picks from [3, 4): the runs must cover the axis, or its largest value may be missed [slices-gap]
// CHECK-NEXT: %best, %next_ids = tp.maxloc
    %best, %next_ids = tp.maxloc %max0, %max1 indices %ids0, %ids1 : tensor<1xf32, #tp.chip<0>>, tensor<1xf32, #tp.chip<1>> indices tensor<1xi64, #tp.chip<0>>, tensor<1xi64, #tp.chip<1>> -> tensor<1xf32>, tensor<1xi64>
    func.return %next_ids : tensor<1xi64>
  }
}

// -----
// two runs on chip 0: [0, 2) and [4, 6)
builtin.module attributes {tp.chips = 2 : i64} {
  func.func @decode(%x: tensor<1x2xf32> {tp.name = "x", tp.role = "input"}, %norm: tensor<2xf32> {tp.name = "model.norm.weight", tp.role = "weight"}, %head: tensor<8x2xf32> {tp.name = "lm_head.weight", tp.role = "weight"})
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
    %hw0 = tp.shard %head at #tp.slice<axis = 0, ranges = [(0, 2), (4, 2)], full = [8, 2]> : tensor<8x2xf32> -> tensor<4x2xf32, #tp.chip<0>>
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
    %hw1 = tp.shard %head at #tp.slice<axis = 0, ranges = [(4, 4)], full = [8, 2]> : tensor<8x2xf32> -> tensor<4x2xf32, #tp.chip<1>>
    %le1 = tensor.empty() : tensor<1x4xf32, #tp.chip<1>>
    %lz1 = linalg.fill ins(%zero : f32) outs(%le1 : tensor<1x4xf32, #tp.chip<1>>) -> tensor<1x4xf32, #tp.chip<1>>
    %logits1 = linalg.generic {indexing_maps = [affine_map<(b, o, i) -> (b, i)>, affine_map<(b, o, i) -> (o, i)>, affine_map<(b, o, i) -> (b, o)>],
        iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%hn, %hw1 : tensor<1x2xf32>, tensor<4x2xf32, #tp.chip<1>>) outs(%lz1 : tensor<1x4xf32, #tp.chip<1>>) {
    ^bb0(%ea: f32, %eb: f32, %acc: f32):
      %p = arith.mulf %ea, %eb : f32
      %s = arith.addf %acc, %p : f32
      linalg.yield %s : f32
    } -> tensor<1x4xf32, #tp.chip<1>>
    %me1 = tensor.empty() : tensor<1xf32, #tp.chip<1>>
    %mi1 = linalg.fill ins(%ninf : f32) outs(%me1 : tensor<1xf32, #tp.chip<1>>) -> tensor<1xf32, #tp.chip<1>>
    %ie1 = tensor.empty() : tensor<1xi64, #tp.chip<1>>
    %ii1 = linalg.fill ins(%izero : i64) outs(%ie1 : tensor<1xi64, #tp.chip<1>>) -> tensor<1xi64, #tp.chip<1>>
    %max1, %ids1 = linalg.generic {doc = "argmax", indexing_maps = [affine_map<(b, v) -> (b, v)>, affine_map<(b, v) -> (b)>, affine_map<(b, v) -> (b)>], iterator_types = ["parallel", "reduction"]}
        ins(%logits1 : tensor<1x4xf32, #tp.chip<1>>) outs(%mi1, %ii1 : tensor<1xf32, #tp.chip<1>>, tensor<1xi64, #tp.chip<1>>) {
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
// CHECK-LABEL: error: the maxloc takes chip 0's pair from %ids0, which picks along axis 1 of %logits0, holding [0, 2) + [4, 6) of 8: an index counted as linalg.index + 0 names the positions of one run, not of several [slices-misaligned]
// CHECK-NEXT: %best, %next_ids = tp.maxloc
    %best, %next_ids = tp.maxloc %max0, %max1 indices %ids0, %ids1 : tensor<1xf32, #tp.chip<0>>, tensor<1xf32, #tp.chip<1>> indices tensor<1xi64, #tp.chip<0>>, tensor<1xi64, #tp.chip<1>> -> tensor<1xf32>, tensor<1xi64>
    func.return %next_ids : tensor<1xi64>
  }
}

// -----
// a pair from two generics: chip 0's value from one argmax, its index from another
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
    %max0b, %ids0b = linalg.generic {doc = "argmax", indexing_maps = [affine_map<(b, v) -> (b, v)>, affine_map<(b, v) -> (b)>, affine_map<(b, v) -> (b)>], iterator_types = ["parallel", "reduction"]}
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
// CHECK-LABEL: error: the maxloc takes chip 0's pair (%max0, %ids0b), whose value and index are not the two results of one argmax: the index must be where that value was found [not-argmax]
// CHECK-NEXT: %best, %next_ids = tp.maxloc
    %best, %next_ids = tp.maxloc %max0, %max1 indices %ids0b, %ids1 : tensor<1xf32, #tp.chip<0>>, tensor<1xf32, #tp.chip<1>> indices tensor<1xi64, #tp.chip<0>>, tensor<1xi64, #tp.chip<1>> -> tensor<1xf32>, tensor<1xi64>
    func.return %next_ids : tensor<1xi64>
  }
}

// -----
// not an argmax body: chip 1 keeps the last maximum (oge)
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
      %gt = arith.cmpf oge, %v, %m : f32
      %nm = arith.select %gt, %v, %m : f32
      %ni = arith.select %gt, %gg, %i : i64
      linalg.yield %nm, %ni : f32, i64
    } -> tensor<1xf32, #tp.chip<1>>, tensor<1xi64, #tp.chip<1>>
// CHECK-LABEL: error: the maxloc takes chip 1's pair (%max1, %ids1) from 'linalg.generic', which is not an argmax as tp writes one (one reduced loop, keeping the first strictly greater value and its loop index plus a constant; the value result first) [not-argmax]
// CHECK-NEXT: %best, %next_ids = tp.maxloc
    %best, %next_ids = tp.maxloc %max0, %max1 indices %ids0, %ids1 : tensor<1xf32, #tp.chip<0>>, tensor<1xf32, #tp.chip<1>> indices tensor<1xi64, #tp.chip<0>>, tensor<1xi64, #tp.chip<1>> -> tensor<1xf32>, tensor<1xi64>
    func.return %next_ids : tensor<1xi64>
  }
}

// -----
// not from -inf: chip 1's largest value starts from 0.0
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
    %mi1 = linalg.fill ins(%zero : f32) outs(%me1 : tensor<1xf32, #tp.chip<1>>) -> tensor<1xf32, #tp.chip<1>>
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
// CHECK-LABEL: error: the maxloc takes chip 1's pair from %ids1, whose largest value starts from %mi1, not from a fill of -inf: where every logit lies below that start it reports the start, not its own largest [not-argmax]
// CHECK-NEXT: %best, %next_ids = tp.maxloc
    %best, %next_ids = tp.maxloc %max0, %max1 indices %ids0, %ids1 : tensor<1xf32, #tp.chip<0>>, tensor<1xf32, #tp.chip<1>> indices tensor<1xi64, #tp.chip<0>>, tensor<1xi64, #tp.chip<1>> -> tensor<1xf32>, tensor<1xi64>
    func.return %next_ids : tensor<1xi64>
  }
}
