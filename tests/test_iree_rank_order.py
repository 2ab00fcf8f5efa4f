"""A rank of ``tp-run --mpi N --backend iree`` posts each send right after its own segment
that made the buffer (`iree_mpi.rank_order`), not where the host relay lists the copy: MPI
moves a send only while its sender is in MPI, so a send listed after the rank's next
segment would leave its receiver idle for that whole segment. Checked on the relay
order itself and on ranks run as threads over in-memory links, whose outputs must stay
bitwise the per-chip programs'."""

from __future__ import annotations

import queue
import threading
from typing import Any

import numpy as np
import pytest
from exported_runner import interpreted
from helpers import program, tiny
from iree_mpi_driver import PIPELINE

from tp_dialect.passes.export import export_module, manifest_of
from tp_dialect.passes.universe import lowered
from tp_dialect.runtime.checkpoint import random_inputs, random_weights
from tp_dialect.runtime.iree_mpi import rank_order, run_rank
from tp_dialect.runtime.reference import run_program
from tp_dialect.runtime.segments import run_host
from tp_dialect.signature import entry_function, ports


def _segment(name: str, chip: int, sends: list[str]) -> dict[str, Any]:
    return {
        "function": name,
        "chip": chip,
        "results": [{"kind": "send", "name": s} for s in sends],
    }


def test_a_send_moves_up_to_the_run_that_made_it() -> None:
    """The host relay's order (sum on chip 0, chip 0's next segment, then the copy back)
    becomes, for rank 0, the copy right after the sum; rank 1's order is unchanged, and a
    buffer made twice is sent after the making that precedes its copy."""
    manifest = {
        "segments": [
            _segment("a0", 0, []),
            _segment("a1", 1, ["p"]),
            _segment("sum", 0, ["s"]),
            _segment("b0", 0, ["s"]),
            _segment("b1", 1, []),
        ],
        "relay": [
            {"run": "a0"},
            {"run": "a1"},
            {"copy": "p", "from": 1, "to": 0},
            {"run": "sum"},
            {"run": "b0"},
            {"copy": "s", "from": 0, "to": 1},
            {"run": "b1"},
        ],
    }
    relay = manifest["relay"]
    assert rank_order(manifest, 0) == [relay[i] for i in (0, 1, 2, 3, 4, 5, 6)]  # b0 made s
    manifest["segments"][3] = _segment("b0", 0, [])  # now only the sum makes s
    assert rank_order(manifest, 0) == [relay[i] for i in (0, 1, 2, 3, 5, 4, 6)]
    assert rank_order(manifest, 1) == relay


class _Links:
    """In-memory links between ranks run as threads; every rank's events in order."""

    def __init__(self, rank: int, boxes: dict[tuple[str, int], queue.Queue[Any]]) -> None:
        self.rank, self.boxes = rank, boxes
        self.events: list[tuple[str, str]] = []

    def send(self, name: str, value: np.ndarray, dest: int) -> None:
        self.events.append(("send", name))
        self.boxes[(name, dest)].put(np.array(value))

    def recv(self, name: str, source: int) -> np.ndarray:
        self.events.append(("recv", name))
        return self.boxes[(name, self.rank)].get(timeout=60)

    def drain(self) -> None:
        pass


@pytest.mark.parametrize(("chips", "allreduce"), [(2, "fold"), (2, "twoshot"), (4, "oneshot")])
def test_ranks_send_before_their_next_segment_and_keep_the_numbers(
    chips: int, allreduce: str
) -> None:
    module = lowered(program(tiny(chips=chips, layers=2)), PIPELINE.format(allreduce))
    values = {**random_weights(module, 0), **random_inputs(module, 1, 5)}
    exported = module.clone()
    export_module(exported)
    manifest = manifest_of(exported)
    boxes: dict[tuple[str, int], queue.Queue[Any]] = {
        (s["copy"], s["to"]): queue.Queue() for s in manifest["relay"] if "copy" in s
    }
    links = [_Links(r, boxes) for r in range(chips)]
    finished: dict[int, Any] = {}
    errors: list[BaseException] = []
    makers = {
        s["function"]: {p["name"] for p in s["results"] if p["kind"] == "send"}
        for s in manifest["segments"]
    }

    def rank(r: int) -> None:
        host_input, call = interpreted(exported, values)  # an interpreter a thread

        def recorded(entry: dict[str, Any], args: list[Any]) -> tuple[Any, ...]:
            links[r].events.append(("call", entry["function"]))
            return call(entry, args)

        try:
            finished[r] = run_rank(manifest, r, None, host_input, recorded, links=links[r])
        except BaseException as err:  # reported by the test thread
            errors.append(err)

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(chips)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    for r in range(chips):
        events = links[r].events
        for i, (kind, name) in enumerate(events):
            if kind != "send":
                continue
            maker = max(
                j for j in range(i) if events[j][0] == "call" and name in makers[events[j][1]]
            )
            between = {k for k, _ in events[maker + 1 : i]}
            assert between <= {"send"}, (r, name, events[maker : i + 1])
    everything = {k: v for part in finished.values() for k, v in part.items()}
    host_input, call = interpreted(exported, values)
    results = run_host(manifest, everything, host_input, call)
    want = run_program(module, values)
    _, outs = ports(entry_function(module))
    for port, got in zip(outs, results, strict=True):
        assert np.array_equal(np.asarray(got), want[port.name]), port.name
