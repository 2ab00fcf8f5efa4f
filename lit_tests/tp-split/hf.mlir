// tp-split plan=hf: the plan transformers builds for the *ForCausalLM of the family whose
// embedding the program names (model.embed_tokens: the llama family's; transformer.wte: GPT-2's),
// entries naming modules the program lacks unused. 5 vocab rows over 2 chips: 3 and 2.
// RUN: tp-opt %s --split-input-file --tp-split="chips=2 plan=hf" | filecheck %s

// A Llama-family step: the embedding's lookup is summed by the first all-reduce, the MLP is
// Megatron's (up colwise, down rowwise), the LM head colwise_rep, its argmax one tp.maxloc.
// CHECK-LABEL: func.func @decode
// CHECK-SAME:    tp.name = "model.embed_tokens.weight"
// CHECK-NEXT:    %embedded_weight_c0 = tp.shard %embed at #tp.slice<axis = 0, ranges = [(0, 3)], full = [5, 2]>
// CHECK-NEXT:    %embedded_weight_c1 = tp.shard %embed at #tp.slice<axis = 0, ranges = [(3, 2)], full = [5, 2]>
// CHECK:         %embedded_sum = tp.allreduce %embedded_c0, %embedded_c1
// CHECK:         %hid_weight_c0 = tp.shard %up at #tp.slice<axis = 0, ranges = [(0, 2)], full = [4, 2]>
// CHECK:         %y_weight_c0 = tp.shard %down at #tp.slice<axis = 1, ranges = [(0, 2)], full = [2, 4]>
// CHECK:         %y_sum = tp.allreduce %y_c0, %y_c1
// CHECK:         %logits_weight_c0 = tp.shard %head at #tp.slice<axis = 0, ranges = [(0, 3)], full = [5, 2]>
// CHECK-NEXT:    %logits_weight_c1 = tp.shard %head at #tp.slice<axis = 0, ranges = [(3, 2)], full = [5, 2]>
// CHECK:         %next_max, %next_ids = tp.maxloc %next_max_c0, %next_max_c1 indices %next_ids_c0, %next_ids_c1
// CHECK-NEXT:    func.return %next_ids
builtin.module {
  func.func @decode(%input_ids: tensor<1x1xi64> {tp.name = "input_ids", tp.role = "input"}, %position: i64 {tp.name = "position", tp.role = "input"}, %embed: tensor<5x2xf32> {tp.name = "model.embed_tokens.weight", tp.role = "weight"}, %up: tensor<4x2xf32> {tp.name = "model.layers.0.mlp.up_proj.weight", tp.role = "weight"}, %down: tensor<2x4xf32> {tp.name = "model.layers.0.mlp.down_proj.weight", tp.role = "weight"}, %norm: tensor<2xf32> {tp.name = "model.norm.weight", tp.role = "weight"}, %head: tensor<5x2xf32> {tp.name = "lm_head.weight", tp.role = "weight"}) -> (tensor<1xi64> {tp.name = "next_ids"}) {
    %embedded_empty = tensor.empty() : tensor<1x1x2xf32>
    %embedded = linalg.generic {doc = "embedding", indexing_maps = [affine_map<(b, s, h) -> (b, s)>, affine_map<(b, s, h) -> (b, s, h)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%input_ids : tensor<1x1xi64>) outs(%embedded_empty : tensor<1x1x2xf32>) {
    ^bb0(%id: i64, %o: f32):
      %row = arith.index_cast %id : i64 to index
      %col = linalg.index 2 : index
      %v = tensor.extract %embed[%row, %col] : tensor<5x2xf32>
      linalg.yield %v : f32
    } -> tensor<1x1x2xf32>
    %zero = arith.constant 0.0 : f32
    %ei = tensor.empty() : tensor<1x1x4xf32>
    %zi = linalg.fill ins(%zero : f32) outs(%ei : tensor<1x1x4xf32>) -> tensor<1x1x4xf32>
    %hid = linalg.generic {indexing_maps = [affine_map<(b, s, o, k) -> (b, s, k)>, affine_map<(b, s, o, k) -> (o, k)>, affine_map<(b, s, o, k) -> (b, s, o)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%embedded, %up : tensor<1x1x2xf32>, tensor<4x2xf32>) outs(%zi : tensor<1x1x4xf32>) {
    ^bb0(%a: f32, %w: f32, %acc: f32):
      %m = arith.mulf %a, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<1x1x4xf32>
    %act = linalg.generic {indexing_maps = [affine_map<(b, s, h) -> (b, s, h)>, affine_map<(b, s, h) -> (b, s, h)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%hid : tensor<1x1x4xf32>) outs(%ei : tensor<1x1x4xf32>) {
    ^bb0(%a: f32, %o: f32):
      %r = arith.maximumf %a, %zero : f32
      linalg.yield %r : f32
    } -> tensor<1x1x4xf32>
    %eh = tensor.empty() : tensor<1x1x2xf32>
    %zh = linalg.fill ins(%zero : f32) outs(%eh : tensor<1x1x2xf32>) -> tensor<1x1x2xf32>
    %y = linalg.generic {indexing_maps = [affine_map<(b, s, o, k) -> (b, s, k)>, affine_map<(b, s, o, k) -> (o, k)>, affine_map<(b, s, o, k) -> (b, s, o)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%act, %down : tensor<1x1x4xf32>, tensor<2x4xf32>) outs(%zh : tensor<1x1x2xf32>) {
    ^bb0(%a: f32, %w: f32, %acc: f32):
      %m = arith.mulf %a, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<1x1x2xf32>
    %x1 = arith.addf %embedded, %y : tensor<1x1x2xf32>
    %last = tensor.extract_slice %x1[0, 0, 0] [1, 1, 2] [1, 1, 1] : tensor<1x1x2xf32> to tensor<1x2xf32>
    %e1 = tensor.empty() : tensor<1xf32>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1xf32>) -> tensor<1xf32>
    %ss = linalg.generic {indexing_maps = [affine_map<(b, h) -> (b, h)>, affine_map<(b, h) -> (b)>], iterator_types = ["parallel", "reduction"]} ins(%last : tensor<1x2xf32>) outs(%z1 : tensor<1xf32>) {
    ^bb0(%a: f32, %acc: f32):
      %q = arith.mulf %a, %a : f32
      %t = arith.addf %acc, %q : f32
      linalg.yield %t : f32
    } -> tensor<1xf32>
    %nh = arith.constant 2.0 : f32
    %eps = arith.constant 1.0e-06 : f32
    %e2 = tensor.empty() : tensor<1x2xf32>
    %normed = linalg.generic {indexing_maps = [affine_map<(b, h) -> (b, h)>, affine_map<(b, h) -> (b)>, affine_map<(b, h) -> (h)>, affine_map<(b, h) -> (b, h)>], iterator_types = ["parallel", "parallel"]} ins(%last, %ss, %norm : tensor<1x2xf32>, tensor<1xf32>, tensor<2xf32>) outs(%e2 : tensor<1x2xf32>) {
    ^bb0(%a: f32, %sq: f32, %w: f32, %o: f32):
      %ms = arith.divf %sq, %nh : f32
      %ve = arith.addf %ms, %eps : f32
      %r = math.rsqrt %ve : f32
      %n = arith.mulf %a, %r : f32
      %nw = arith.mulf %n, %w : f32
      linalg.yield %nw : f32
    } -> tensor<1x2xf32>
    %e3 = tensor.empty() : tensor<1x5xf32>
    %z3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<1x5xf32>) -> tensor<1x5xf32>
    %logits = linalg.generic {indexing_maps = [affine_map<(b, v, h) -> (b, h)>, affine_map<(b, v, h) -> (v, h)>, affine_map<(b, v, h) -> (b, v)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%normed, %head : tensor<1x2xf32>, tensor<5x2xf32>) outs(%z3 : tensor<1x5xf32>) {
    ^bb0(%a: f32, %w: f32, %acc: f32):
      %m = arith.mulf %a, %w : f32
      %t = arith.addf %acc, %m : f32
      linalg.yield %t : f32
    } -> tensor<1x5xf32>
    %ninf = arith.constant 0xFF800000 : f32
    %i0 = arith.constant 0 : i64
    %em = tensor.empty() : tensor<1xf32>
    %minit = linalg.fill ins(%ninf : f32) outs(%em : tensor<1xf32>) -> tensor<1xf32>
    %eidx = tensor.empty() : tensor<1xi64>
    %iinit = linalg.fill ins(%i0 : i64) outs(%eidx : tensor<1xi64>) -> tensor<1xi64>
    %next_max, %next_ids = linalg.generic {doc = "argmax", indexing_maps = [affine_map<(b, v) -> (b, v)>, affine_map<(b, v) -> (b)>, affine_map<(b, v) -> (b)>], iterator_types = ["parallel", "reduction"]} ins(%logits : tensor<1x5xf32>) outs(%minit, %iinit : tensor<1xf32>, tensor<1xi64>) {
    ^bb0(%lv: f32, %mv: f32, %iv: i64):
      %j = linalg.index 1 : index
      %g = arith.index_cast %j : index to i64
      %gt = arith.cmpf ogt, %lv, %mv : f32
      %nm = arith.select %gt, %lv, %mv : f32
      %ni = arith.select %gt, %g, %iv : i64
      linalg.yield %nm, %ni : f32, i64
    } -> tensor<1xf32>, tensor<1xi64>
    func.return %next_ids : tensor<1xi64>
  }
}

// -----
// GPT-2 with its head tied to wte: one table, cut once by rows, read by the lookup and the head
// (no second shard); wpe stays whole.
// CHECK-LABEL: func.func @decode
// CHECK-SAME:    tp.name = "transformer.wte.weight"
// CHECK-NEXT:    %embedded_weight_c0 = tp.shard %embed at #tp.slice<axis = 0, ranges = [(0, 3)], full = [5, 2]>
// CHECK-NEXT:    %embedded_weight_c1 = tp.shard %embed at #tp.slice<axis = 0, ranges = [(3, 2)], full = [5, 2]>
// CHECK-NOT:     tp.shard
// CHECK:         %placed = linalg.generic {{.*}}doc = "embedding"
// CHECK:           tensor.extract %wpe
// CHECK:         %embedded_sum = tp.allreduce %embedded_c0, %embedded_c1
// CHECK-NEXT:    %x0 = arith.addf %embedded_sum, %placed
// CHECK-NOT:     tp.shard
// CHECK:         %logits_c0 = linalg.generic {{.*}} ins(%normed, %embedded_weight_c0
// CHECK:         %logits_c1 = linalg.generic {{.*}} ins(%normed, %embedded_weight_c1
// CHECK:         %next_max, %next_ids = tp.maxloc
// CHECK-NEXT:    func.return %next_ids
builtin.module {
  func.func @decode(%input_ids: tensor<1x1xi64> {tp.name = "input_ids", tp.role = "input"}, %position: i64 {tp.name = "position", tp.role = "input"}, %embed: tensor<5x2xf32> {tp.name = "transformer.wte.weight", tp.role = "weight"}, %wpe: tensor<4x2xf32> {tp.name = "transformer.wpe.weight", tp.role = "weight"}, %norm: tensor<2xf32> {tp.name = "transformer.ln_f.weight", tp.role = "weight"}) -> (tensor<1xi64> {tp.name = "next_ids"}) {
    %embedded_empty = tensor.empty() : tensor<1x1x2xf32>
    %embedded = linalg.generic {doc = "embedding", indexing_maps = [affine_map<(b, s, h) -> (b, s)>, affine_map<(b, s, h) -> (b, s, h)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%input_ids : tensor<1x1xi64>) outs(%embedded_empty : tensor<1x1x2xf32>) {
    ^bb0(%id: i64, %o: f32):
      %row = arith.index_cast %id : i64 to index
      %col = linalg.index 2 : index
      %v = tensor.extract %embed[%row, %col] : tensor<5x2xf32>
      linalg.yield %v : f32
    } -> tensor<1x1x2xf32>
    %placed_empty = tensor.empty() : tensor<1x1x2xf32>
    %placed = linalg.generic {doc = "embedding", indexing_maps = [affine_map<(b, s, h) -> (b, s)>, affine_map<(b, s, h) -> (b, s, h)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%input_ids : tensor<1x1xi64>) outs(%placed_empty : tensor<1x1x2xf32>) {
    ^bb0(%id: i64, %o: f32):
      %p = arith.index_cast %position : i64 to index
      %si = linalg.index 1 : index
      %row = arith.addi %p, %si : index
      %col = linalg.index 2 : index
      %v = tensor.extract %wpe[%row, %col] : tensor<4x2xf32>
      linalg.yield %v : f32
    } -> tensor<1x1x2xf32>
    %x0 = arith.addf %embedded, %placed : tensor<1x1x2xf32>
    %zero = arith.constant 0.0 : f32
    %last = tensor.extract_slice %x0[0, 0, 0] [1, 1, 2] [1, 1, 1] : tensor<1x1x2xf32> to tensor<1x2xf32>
    %e1 = tensor.empty() : tensor<1xf32>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1xf32>) -> tensor<1xf32>
    %ss = linalg.generic {indexing_maps = [affine_map<(b, h) -> (b, h)>, affine_map<(b, h) -> (b)>], iterator_types = ["parallel", "reduction"]} ins(%last : tensor<1x2xf32>) outs(%z1 : tensor<1xf32>) {
    ^bb0(%a: f32, %acc: f32):
      %q = arith.mulf %a, %a : f32
      %t = arith.addf %acc, %q : f32
      linalg.yield %t : f32
    } -> tensor<1xf32>
    %nh = arith.constant 2.0 : f32
    %eps = arith.constant 1.0e-06 : f32
    %e2 = tensor.empty() : tensor<1x2xf32>
    %normed = linalg.generic {indexing_maps = [affine_map<(b, h) -> (b, h)>, affine_map<(b, h) -> (b)>, affine_map<(b, h) -> (h)>, affine_map<(b, h) -> (b, h)>], iterator_types = ["parallel", "parallel"]} ins(%last, %ss, %norm : tensor<1x2xf32>, tensor<1xf32>, tensor<2xf32>) outs(%e2 : tensor<1x2xf32>) {
    ^bb0(%a: f32, %sq: f32, %w: f32, %o: f32):
      %ms = arith.divf %sq, %nh : f32
      %ve = arith.addf %ms, %eps : f32
      %r = math.rsqrt %ve : f32
      %n = arith.mulf %a, %r : f32
      %nw = arith.mulf %n, %w : f32
      linalg.yield %nw : f32
    } -> tensor<1x2xf32>
    %e3 = tensor.empty() : tensor<1x5xf32>
    %z3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<1x5xf32>) -> tensor<1x5xf32>
    %logits = linalg.generic {indexing_maps = [affine_map<(b, v, h) -> (b, h)>, affine_map<(b, v, h) -> (v, h)>, affine_map<(b, v, h) -> (b, v)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%normed, %embed : tensor<1x2xf32>, tensor<5x2xf32>) outs(%z3 : tensor<1x5xf32>) {
    ^bb0(%a: f32, %w: f32, %acc: f32):
      %m = arith.mulf %a, %w : f32
      %t = arith.addf %acc, %m : f32
      linalg.yield %t : f32
    } -> tensor<1x5xf32>
    %ninf = arith.constant 0xFF800000 : f32
    %i0 = arith.constant 0 : i64
    %em = tensor.empty() : tensor<1xf32>
    %minit = linalg.fill ins(%ninf : f32) outs(%em : tensor<1xf32>) -> tensor<1xf32>
    %eidx = tensor.empty() : tensor<1xi64>
    %iinit = linalg.fill ins(%i0 : i64) outs(%eidx : tensor<1xi64>) -> tensor<1xi64>
    %next_max, %next_ids = linalg.generic {doc = "argmax", indexing_maps = [affine_map<(b, v) -> (b, v)>, affine_map<(b, v) -> (b)>, affine_map<(b, v) -> (b)>], iterator_types = ["parallel", "reduction"]} ins(%logits : tensor<1x5xf32>) outs(%minit, %iinit : tensor<1xf32>, tensor<1xi64>) {
    ^bb0(%lv: f32, %mv: f32, %iv: i64):
      %j = linalg.index 1 : index
      %g = arith.index_cast %j : index to i64
      %gt = arith.cmpf ogt, %lv, %mv : f32
      %nm = arith.select %gt, %lv, %mv : f32
      %ni = arith.select %gt, %g, %iv : i64
      linalg.yield %nm, %ni : f32, i64
    } -> tensor<1xf32>, tensor<1xi64>
    func.return %next_ids : tensor<1xi64>
  }
}
