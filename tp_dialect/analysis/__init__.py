"""Analyses over tp programs: the manifest, all-reduce folds, and (as passes land) section
touch sets, transfers, phases, link points and the host's relay."""
