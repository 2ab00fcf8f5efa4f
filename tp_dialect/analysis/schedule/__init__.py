"""When and where work runs: what each statement touches, phases, the tensors that cross
between chips, where chips halt, the host's relay rounds, per-chip programs that fit."""
