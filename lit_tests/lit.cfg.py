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
path = [os.path.dirname(sys.executable), os.environ.get("PATH", "")]
# tp-opt, tp-gen, tp-run and FileCheck run in children of one fork server that imported them
# (forkserver.py: ~1 s less per RUN line); TP_LIT_FORK=0 runs the installed scripts.
if os.environ.get("TP_LIT_FORK", "1") != "0":
    sys.path.insert(0, os.path.dirname(__file__))
    import forkserver

    clients = forkserver.start(sys.executable)
    if clients is not None:
        path.insert(0, clients)
config.environment["PATH"] = os.pathsep.join(path)
# Colour and terminal width must not change what FileCheck sees.
config.environment["COLUMNS"] = "200"
