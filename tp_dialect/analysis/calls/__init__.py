"""Outlined calls: which functions are lowered once, what a call does, a program read through
its calls."""
