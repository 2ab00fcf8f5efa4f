# lit configuration for tp: every test runs tp-opt / xdsl-opt from the active venv
# and checks its output with FileCheck (the Python filecheck package).
import os
import sys

import lit.formats

config.name = "tp"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["lit.cfg.py", "Inputs"]  # Inputs/: files the tests read, not tests
# The tools live beside the Python running lit (the project venv).
config.environment["PATH"] = os.pathsep.join(
    [os.path.dirname(sys.executable), os.environ.get("PATH", "")]
)
# Colour and terminal width must not change what FileCheck sees.
config.environment["COLUMNS"] = "200"
