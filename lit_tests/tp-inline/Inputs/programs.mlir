// Generated: tp-opt ../programs.mlir --tp-relay
builtin.module attributes {tp.chips = 2 : i64} {
  func.func private @layer.chip0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {tp.chip = 0 : i64} {
    %p = tp.link 1 sends() as [] receives ["l_p"] : () -> tensor<4xf32>
    %s = tp.section "l_s" on [0] {
      %0 = arith.addf %x, %p : tensor<4xf32>
      tp.yield %0 : tensor<4xf32>
    } : tensor<4xf32>
    tp.link 2 sends(%s) as ["l_s"] receives [] : (tensor<4xf32>) -> ()
    func.return %s : tensor<4xf32>
  }
  func.func private @layer.chip1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {tp.chip = 1 : i64} {
    %p = tp.section "l_p" on [1] {
      %0 = arith.mulf %x, %x : tensor<4xf32>
      tp.yield %0 : tensor<4xf32>
    } : tensor<4xf32>
    %s = tp.link 1 sends(%p) as ["l_p"] receives ["l_s"] : (tensor<4xf32>) -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
  func.func @decode(%x: tensor<4xf32>) -> tensor<4xf32> {
    %r = tp.chip_program on 0 (%x) {
    ^bb0(%x0: tensor<4xf32>):
      %y0 = func.call @layer.chip0(%x0) {tp.tag = "l0_"} : (tensor<4xf32>) -> tensor<4xf32>
      %y1 = func.call @layer.chip0(%y0) {tp.tag = "l1_"} : (tensor<4xf32>) -> tensor<4xf32>
      %y2 = func.call @layer.chip0(%y1) {tp.tag = "l2_"} : (tensor<4xf32>) -> tensor<4xf32>
      tp.finish %y2 : tensor<4xf32>
    } -> (tensor<4xf32>)
    tp.chip_program on 1 (%x) {
    ^bb0(%x1: tensor<4xf32>):
      %y0 = func.call @layer.chip1(%x1) {tp.tag = "l0_"} : (tensor<4xf32>) -> tensor<4xf32>
      %y1 = func.call @layer.chip1(%y0) {tp.tag = "l1_"} : (tensor<4xf32>) -> tensor<4xf32>
      %y2 = func.call @layer.chip1(%y1) {tp.tag = "l2_"} : (tensor<4xf32>) -> tensor<4xf32>
      tp.finish
    } -> ()
    tp.relay {
      tp.run_to round 0 chip 0 halt 1
      tp.run_to round 0 chip 1 halt 1
      tp.relay_repeat 3 times every 2 rounds strides array<i64: 2, 1> tags ["l0_", "l1_", "l2_"] {
        tp.copy round 1 "l0_p" from 1 to 0
        tp.run_to round 1 chip 0 halt 2
        tp.run_to round 2 chip 0 halt 3
        tp.copy round 2 "l0_s" from 0 to 1
        tp.run_to round 2 chip 1 halt 2
      }
    }
    func.return %r : tensor<4xf32>
  }
}

