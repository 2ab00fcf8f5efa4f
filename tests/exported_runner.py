"""tp-export's segments run by the reference interpreter: the ``host_input`` and ``call`` a
relay runner (`run_segments`, `iree_mpi.run_rank`) takes, for tests that check the export
against the program it came from."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.interpreters.func import FuncFunctions

from tp_dialect.runtime.arrays import slice_of
from tp_dialect.runtime.iree_exec import code_of
from tp_dialect.runtime.numpy_impls import LocatingInterpreter, NumpyFunctions


def interpreted(
    exported: ModuleOp, values: Mapping[str, Any]
) -> tuple[Callable[[dict[str, Any]], Any], Callable[[dict[str, Any], list[Any]], tuple[Any, ...]]]:
    """``host_input`` (a host input from ``values``, whole or cut as its port says) and
    ``call`` (an entry's function, or the shared one it names, run by the interpreter)."""
    interpreter = LocatingInterpreter(exported)
    interpreter.register_implementations(FuncFunctions())
    interpreter.register_implementations(NumpyFunctions())

    def host_input(port: dict[str, Any]) -> Any:
        value = np.asarray(values[port["name"]])
        if port["kind"] == "shard":
            ranges = [(int(a), int(n)) for a, n in port["ranges"]]
            value = slice_of(value, port["axis"], ranges)
        return value

    def call(entry: dict[str, Any], args: list[Any]) -> tuple[Any, ...]:
        return tuple(interpreter.call_op(code_of(entry), tuple(args)))

    return host_input, call
