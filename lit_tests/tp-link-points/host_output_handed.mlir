// tp-link-points refuses a call handed a value no chip holds: layer 1 handed layer 0's
// present KV cache, which @layer stores whole by tp.unshard (a host output) — not what
// tp-split writes (it refuses such a reader), so written here by editing tp-gen's program.
// RUN: tp-gen qwen3 --preset tiny --chips 2 --layers 2 --outline | sed -e 's/%%past_key.1, %%past_value.1) {tp.layer = 1/%%l0_present_key, %%l0_present_value) {tp.layer = 1/' | not tp-opt -p 'tp-relocate,tp-transfers,tp-link-points' 2>&1 | filecheck %s
// CHECK: error: the call hands @layer.chip0 %l0_present_key, which chip 0 does not hold (a host output, stored whole by tp.unshard): a chip's call reads what its chip holds [not-linkable]
