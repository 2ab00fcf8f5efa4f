"""When and where work runs: the tensors that cross between chips, phases, where chips halt,
per-chip programs that fit (over `tp_dialect.analysis.touch` and `tp_dialect.analysis.rounds`)."""
