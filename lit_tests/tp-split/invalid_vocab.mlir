// Every refusal of tp-split over a vocabulary: chips without rows, a cut table read otherwise
// than by one lookup, a lookup that cannot be summed, an argmax that is not the greedy head's.
// RUN: tp-opt %s --split-input-file --verify-diagnostics --tp-split="chips=4 plan=%S/Inputs/head.json" | filecheck %s

// More chips than vocab rows: every chip must hold one (the vocab is not padded).
builtin.module {
// CHECK-LABEL: error: 4 chips exceed the 3 rows of axis 0 of 'model.embed_tokens.weight': every chip must hold at least one [plan-mismatch]
  func.func @fewer_rows_than_chips(%ids: tensor<1x2xi64> {tp.name = "input_ids"}, %table: tensor<3x2xf32> {tp.name = "model.embed_tokens.weight"}) -> tensor<1x2x2xf32> {
    %e = tensor.empty() : tensor<1x2x2xf32>
    %x = linalg.generic {doc = "embedding", indexing_maps = [affine_map<(b, s, h) -> (b, s)>, affine_map<(b, s, h) -> (b, s, h)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ids : tensor<1x2xi64>) outs(%e : tensor<1x2x2xf32>) {
    ^bb0(%id: i64, %o: f32):
      %row = arith.index_cast %id : i64 to index
      %col = linalg.index 2 : index
      %v = tensor.extract %table[%row, %col] : tensor<3x2xf32>
      linalg.yield %v : f32
    } -> tensor<1x2x2xf32>
    func.return %x : tensor<1x2x2xf32>
  }
}

// -----
// 9 rows over 4 chips: ceil(9/4) = 3 rows each leaves the last chip none.
builtin.module {
// CHECK-LABEL: error: 4 chips over the 9 rows of axis 0 of 'model.embed_tokens.weight' leave chip 3 none: each holds ceil(9/4) = 3, the last the rest [plan-mismatch]
  func.func @a_chip_left_without_rows(%ids: tensor<1x2xi64> {tp.name = "input_ids"}, %table: tensor<9x2xf32> {tp.name = "model.embed_tokens.weight"}) -> tensor<1x2x2xf32> {
    %e = tensor.empty() : tensor<1x2x2xf32>
    %x = linalg.generic {doc = "embedding", indexing_maps = [affine_map<(b, s, h) -> (b, s)>, affine_map<(b, s, h) -> (b, s, h)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ids : tensor<1x2xi64>) outs(%e : tensor<1x2x2xf32>) {
    ^bb0(%id: i64, %o: f32):
      %row = arith.index_cast %id : i64 to index
      %col = linalg.index 2 : index
      %v = tensor.extract %table[%row, %col] : tensor<9x2xf32>
      linalg.yield %v : f32
    } -> tensor<1x2x2xf32>
    func.return %x : tensor<1x2x2xf32>
  }
}

// -----
// embedding_rowwise cuts a table [rows, features], nothing of another rank.
builtin.module {
// CHECK-LABEL: error: plan entry 'embed_tokens' (embedding_rowwise) matches 'model.embed_tokens.weight' of rank 3: an embedding table has rank 2 ([rows, features]) [plan-mismatch]
  func.func @not_a_table(%ids: tensor<1x2xi64> {tp.name = "input_ids"}, %table: tensor<8x2x2xf32> {tp.name = "model.embed_tokens.weight"}) -> tensor<1x2x2xf32> {
    %e = tensor.empty() : tensor<1x2x2xf32>
    %x = linalg.generic {doc = "embedding", indexing_maps = [affine_map<(b, s, h) -> (b, s)>, affine_map<(b, s, h) -> (b, s, h)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ids : tensor<1x2xi64>) outs(%e : tensor<1x2x2xf32>) {
    ^bb0(%id: i64, %o: f32):
      %row = arith.index_cast %id : i64 to index
      %col = linalg.index 2 : index
      %v = tensor.extract %table[%row, %col, %col] : tensor<8x2x2xf32>
      linalg.yield %v : f32
    } -> tensor<1x2x2xf32>
    func.return %x : tensor<1x2x2xf32>
  }
}

// -----
// A body reading the cut table twice (a row of its own besides the looked-up one) is no lookup.
builtin.module {
  func.func @two_reads(%ids: tensor<1x2xi64> {tp.name = "input_ids"}, %table: tensor<8x2xf32> {tp.name = "model.embed_tokens.weight"}) -> tensor<1x2x2xf32> {
    %e = tensor.empty() : tensor<1x2x2xf32>
// CHECK-LABEL: error: 'linalg.generic' reads %table (cut along axis 0, chip 0 holding [0, 2) of 8): its body reads the cut table otherwise than by one tensor.extract: only a gather (an embedding lookup) from a cut table is split [cannot-split]
    %x = linalg.generic {doc = "embedding", indexing_maps = [affine_map<(b, s, h) -> (b, s)>, affine_map<(b, s, h) -> (b, s, h)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ids : tensor<1x2xi64>) outs(%e : tensor<1x2x2xf32>) {
    ^bb0(%id: i64, %o: f32):
      %row = arith.index_cast %id : i64 to index
      %col = linalg.index 2 : index
      %v = tensor.extract %table[%row, %col] : tensor<8x2xf32>
      %c0 = arith.constant 0 : index
      %u = tensor.extract %table[%c0, %col] : tensor<8x2xf32>
      %s = arith.addf %v, %u : f32
      linalg.yield %s : f32
    } -> tensor<1x2x2xf32>
    func.return %x : tensor<1x2x2xf32>
  }
}

// -----
// The chips' lookups are summed: an integer table's rows cannot be (the mask yields 0.0).
builtin.module {
  func.func @integer_rows(%ids: tensor<1x2xi64> {tp.name = "input_ids"}, %table: tensor<8x2xi32> {tp.name = "model.embed_tokens.weight"}) -> tensor<1x2x2xi32> {
    %e = tensor.empty() : tensor<1x2x2xi32>
// CHECK-LABEL: error: 'linalg.generic' reads %table (cut along axis 0, chip 0 holding [0, 2) of 8): a gather from a cut table is summed over the chips: it must yield one float [cannot-split]
    %x = linalg.generic {doc = "embedding", indexing_maps = [affine_map<(b, s, h) -> (b, s)>, affine_map<(b, s, h) -> (b, s, h)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ids : tensor<1x2xi64>) outs(%e : tensor<1x2x2xi32>) {
    ^bb0(%id: i64, %o: i32):
      %row = arith.index_cast %id : i64 to index
      %col = linalg.index 2 : index
      %v = tensor.extract %table[%row, %col] : tensor<8x2xi32>
      linalg.yield %v : i32
    } -> tensor<1x2x2xi32>
    func.return %x : tensor<1x2x2xi32>
  }
}

// -----
// An argmax keeping the LAST maximum (oge) is not the greedy head's form: its index is refused.
builtin.module {
  func.func @sum_of_cut_logits(%h: tensor<1x2xf32> {tp.name = "h"}, %head: tensor<8x2xf32> {tp.name = "lm_head.weight"}) -> tensor<1xf32> {
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<1x8xf32>
    %zeros = linalg.fill ins(%z : f32) outs(%e : tensor<1x8xf32>) -> tensor<1x8xf32>
    %logits = linalg.generic {indexing_maps = [affine_map<(b, v, k) -> (b, k)>, affine_map<(b, v, k) -> (v, k)>, affine_map<(b, v, k) -> (b, v)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%h, %head : tensor<1x2xf32>, tensor<8x2xf32>) outs(%zeros : tensor<1x8xf32>) {
    ^bb0(%a: f32, %w: f32, %acc: f32):
      %m = arith.mulf %a, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<1x8xf32>
    %ninf = arith.constant 0xFF800000 : f32
    %em = tensor.empty() : tensor<1xf32>
    %minit = linalg.fill ins(%ninf : f32) outs(%em : tensor<1xf32>) -> tensor<1xf32>
    %j0 = arith.constant 0 : i64
    %ei = tensor.empty() : tensor<1xi64>
    %iinit = linalg.fill ins(%j0 : i64) outs(%ei : tensor<1xi64>) -> tensor<1xi64>
// CHECK-LABEL: error: 'linalg.generic' reads %logits (cut along axis 1, chip 0 holding [0, 2) of 8): the body reads the index of the cut loop, which differs per chip [cannot-split]
    %max, %next = linalg.generic {doc = "argmax", indexing_maps = [affine_map<(b, v) -> (b, v)>, affine_map<(b, v) -> (b)>, affine_map<(b, v) -> (b)>], iterator_types = ["parallel", "reduction"]} ins(%logits : tensor<1x8xf32>) outs(%minit, %iinit : tensor<1xf32>, tensor<1xi64>) {
    ^bb0(%lv: f32, %mv: f32, %iv: i64):
      %j = linalg.index 1 : index
      %g = arith.index_cast %j : index to i64
      %gt = arith.cmpf oge, %lv, %mv : f32
      %nm = arith.select %gt, %lv, %mv : f32
      %ni = arith.select %gt, %g, %iv : i64
      linalg.yield %nm, %ni : f32, i64
    } -> tensor<1xf32>, tensor<1xi64>
    func.return %max : tensor<1xf32>
  }
}
