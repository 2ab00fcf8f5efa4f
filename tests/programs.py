"""Old home of `program`, `tiny` and `tiny_on`, kept only so that test files written on other
branches before ``tests/helpers.py`` still import; new code imports from helpers."""

from helpers import program, tiny, tiny_on  # noqa: F401
