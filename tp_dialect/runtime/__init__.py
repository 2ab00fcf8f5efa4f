"""Running tp programs on numpy: the reference interpreter, checkpoints, placement."""
