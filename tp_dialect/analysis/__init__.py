"""Analyses over tp programs, read by the passes, the runtime and the tools: chip provenance
and the shard obligation, coverage, the manifest, all-reduce folds, section touch sets,
transfers, phases, link points, per-chip programs and the host's relay; the machine, its links
and what work costs on it."""
