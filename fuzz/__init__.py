"""tp's fuzz harness: mutated programs, inputs, machine files and flags run through tp-opt
and tp-run in-process, each classified as a clean error, a success, an internal error or a
hang; every new internal error or hang minimised and kept as a reproducer.

``python -m fuzz --inputs 20000 --seed 0 --minutes 14`` is ``make fuzz``; the test suite
runs a seeded slice of it (``tests/test_fuzz_slice.py``) and every reproducer ever found
(``tests/test_fuzz_reproducers.py``). Modules: `fuzz.case` (cases, outcomes, their folders),
`fuzz.execute` (running a tool in-process, the verdict and the signature), `fuzz.corpus`
(what is mutated, and the pipelines), `fuzz.mutate` (text mutations), `fuzz.tprun` (tp-run's
inputs), `fuzz.cases` (case i of seed s), `fuzz.pool` (workers and the watchdog),
`fuzz.minimise` (delta debugging), `fuzz.reproducers` (the folder), `fuzz.run` (a campaign
and its summary).
"""

from fuzz.case import CLEAN, HANG, INTERNAL, SUCCESS, Case, Outcome
from fuzz.run import Report, campaign

__all__ = ["CLEAN", "HANG", "INTERNAL", "SUCCESS", "Case", "Outcome", "Report", "campaign"]
