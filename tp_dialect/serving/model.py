"""A Hugging Face model directory served on N chips: greedy tokens from its step programs.

`load` reads the directory's ``config.json`` through the family registry, writes the
whole-model step programs (``@prefill`` for a prompt of S tokens, ``@decode`` for one token),
splits them over the chips by the family's Hugging Face plan (``tp-split{plan=hf}``: certified
on the way), lowers them to the stage asked (per-chip programs and the host's relay by
default) and runs them on a `Session` whose chips keep their state: each weight slice read
once from the checkpoint, each KV-cache slice allocated once and updated where its chip holds
it. A `Model` is that state with its programs: `Model.generate` gives the same ids as
transformers' greedy ``generate`` (``tests/test_serving.py`` checks them against an
independent numpy implementation). Prefill programs are written per prompt length, on first
use, and kept.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from tp_dialect.collectives import WIRES
from tp_dialect.errors import TpError
from tp_dialect.frontend.registry import Pretrained, read_model
from tp_dialect.frontend.split import split_module
from tp_dialect.passes.universe import lowered
from tp_dialect.runtime.checkpoint import ModelWeights, open_model_dir
from tp_dialect.runtime.generation import GenerationResult, Limits, check_prompt, generate
from tp_dialect.runtime.session import Session, Step
from tp_dialect.universe import tp_context

STAGES: dict[str, str] = {
    "source": "",
    "relocated": "tp-relocate",
    "phased": "tp-relocate,tp-transfers,tp-phase",
    "programs": "tp-relocate,tp-transfers,tp-phase,tp-link-points,tp-relay",
}
"""The lowering stages a model can run at, each the pass pipeline that reaches it; every
stage computes the same ids (the pipeline's invariant), ``programs`` is what chips run."""

DEFAULT_POSITIONS = 256
"""The cache size when none is asked: the model's own limit if smaller."""


class ServingError(ValueError, TpError):
    """A model that cannot be served as asked (one line for the user)."""


@dataclass(frozen=True)
class Options:
    """How a model is served: ``chips`` it is split over, the cache size ``max_positions``
    (prompt plus generated tokens), the ``batch`` of prompts run together, the lowering
    ``stage``, whether steps also return the last position's ``logits``, and the ``wire``
    format all-reduces carry (None: f32; ``bf16``: tp-narrow-wire's, where the chip reads
    the sum as bf16)."""

    chips: int = 1
    max_positions: int | None = None
    batch: int = 1
    stage: str = "programs"
    logits: bool = False
    wire: str | None = None


class Model:
    """A model directory's step programs on chips that keep their state (module docstring).
    Built by `load`; ``programs`` holds the lowered modules by step name (``decode``,
    ``prefill[S]``)."""

    def __init__(
        self,
        model: Pretrained,
        directory: Path,
        options: Options,
        session: Any,
        prepare: Callable[[ModuleOp], Any],
    ) -> None:
        self.pretrained = model
        self.options = options
        self.session = session
        self._prepare = prepare
        self.programs: dict[str, ModuleOp] = {}
        self._steps: dict[str, Any] = {}
        most = model.entry.default_positions(model.config)
        positions = options.max_positions or min(DEFAULT_POSITIONS, most)
        if positions > most:
            raise ServingError(f"max_positions {positions} exceeds the model's {most} positions")
        self.limits = Limits(int(model.config["vocab_size"]), positions, options.batch)
        self.eos, self.pad = token_ids(model.config, directory)

    @property
    def config(self) -> Mapping[str, Any]:
        """The directory's ``config.json`` as read."""
        return self.pretrained.config

    def program(self, step: str, tokens: int) -> ModuleOp:
        """The lowered ``step`` program (``prefill`` of ``tokens`` tokens, or ``decode``)."""
        key = "decode" if step == "decode" else f"prefill[{tokens}]"
        if key not in self.programs:
            self.programs[key] = build_program(
                self.pretrained, self.options, self.limits, step, tokens
            )
        return self.programs[key]

    def _step(self, step: str, tokens: int) -> Any:
        key = "decode" if step == "decode" else f"prefill[{tokens}]"
        if key not in self._steps:
            self._steps[key] = self._prepare(self.program(step, tokens))
        return self._steps[key]

    def prefill(self, ids: Any) -> dict[str, np.ndarray]:
        """Run the prompt ``ids [B, S]`` at positions ``0..S-1`` (the cache's rows ``[0, S)``
        written): ``next_ids`` (and ``logits`` with the option) of its last position."""
        prompt = check_prompt(np.asarray(ids), 1, self.limits)
        return self.session.run(
            self._step("prefill", prompt.shape[1]), {"input_ids": prompt, "position": np.int64(0)}
        )

    def decode(self, ids: Any, position: int) -> dict[str, np.ndarray]:
        """Run one token per row, ``ids [B]`` or ``[B, 1]``, at ``position`` (the cache
        rows before it hold the earlier tokens): ``next_ids`` (and ``logits``)."""
        tokens = np.asarray(ids, dtype=np.int64).reshape(self.limits.batch, 1)
        if not 0 <= position < self.limits.positions:
            raise ServingError(
                f"position {position} is outside the cache's {self.limits.positions} positions"
            )
        check_prompt(tokens, 1, Limits(self.limits.vocab, self.limits.positions, self.limits.batch))
        return self.session.run(
            self._step("decode", 1), {"input_ids": tokens, "position": np.int64(position)}
        )

    def generate(
        self,
        ids: Any,
        max_new_tokens: int,
        on_token: Callable[[int, np.ndarray], None] | None = None,
    ) -> GenerationResult:
        """Greedy ``max_new_tokens`` ids after the prompt ``ids [B, S]`` (fewer when every
        row reached eos), with time to first token and per output token; ``on_token(k,
        ids)`` is told each step's ids as they come."""

        def prefill(tokens: int) -> Step:
            return self._step("prefill", tokens)

        return generate(
            self.session,
            prefill,
            self._step("decode", 1),
            np.asarray(ids),
            max_new_tokens,
            self.limits,
            eos=self.eos,
            pad=self.pad,
            on_token=on_token,
        )

    def close(self) -> None:
        """Release the chips (the serving ranks, under MPI)."""
        close = getattr(self.session, "close", None)
        if close is not None:
            close()


def build_program(
    model: Pretrained, options: Options, limits: Limits, step: str, tokens: int
) -> ModuleOp:
    """The ``step`` program of ``model`` for ``tokens`` tokens: written unsharded, split over
    ``options.chips`` by the family's Hugging Face plan and lowered to ``options.stage``."""
    if options.stage not in STAGES:
        raise ServingError(f"unknown stage '{options.stage}' (one of {', '.join(STAGES)})")
    text = model.write(model.step(step, tokens, limits.batch, limits.positions, options.logits))
    module = Parser(tp_context(), text).parse_module()
    if options.chips > 1:
        module = split_module(module, options.chips, model.entry.plan)
    # Written and split outlined (one @layer), run inlined: a session keeps each layer's
    # weight and cache slices as the chips' own buffers, which it finds as the shards of the
    # entry's arguments (an outlined callee cuts whichever layer's arguments it is handed).
    narrow = [f"tp-narrow-wire{{wire={options.wire}}}"] if options.wire else []
    stage = [STAGES[options.stage]] if STAGES[options.stage] else []
    return lowered(module, ",".join(["tp-inline", *narrow, *stage]))


def load(
    directory: str | Path,
    chips: int = 1,
    max_positions: int | None = None,
    batch: int = 1,
    stage: str = "programs",
    logits: bool = False,
    backend: str = "interpreter",
    engine: str = "interpreter",
    wire: str | None = None,
) -> Model | None:
    """A `Model` serving the Hugging Face directory ``directory`` on ``chips`` chips: its
    config read and checked (unknown or not-understood fields refused by name), its weights
    checked against the programs' ports before anything runs. ``backend``: ``interpreter``
    (chips in this process), ``iree`` (chips in this process as native code built by IREE) or
    ``mpi`` (under ``mpiexec -n chips``: every rank calls `load`; rank 0 gets the model, the
    other ranks serve inside `load` until rank 0 closes it, then get None); ``engine``: what
    runs a rank's chip under ``mpi``, ``interpreter`` or ``iree``; ``wire="bf16"``: the
    all-reduces whose readers read bf16 on sn40l carry bf16 (tp-narrow-wire; off by default,
    the logits then differ from the f32 program's by bf16 rounding)."""
    if engine not in ("interpreter", "iree") or (engine == "iree" and backend != "mpi"):
        raise ServingError(
            f"engine '{engine}' is for backend 'mpi' (interpreter or iree; in one process, "
            "backend 'iree')"
            if engine == "iree"
            else f"unknown engine '{engine}' (interpreter or iree)"
        )
    if "iree" in (backend, engine) and stage != "programs":
        raise ServingError(
            f"IREE runs the per-chip programs: stage 'programs', not '{stage}' (the "
            "interpreter runs every stage)"
        )
    if wire is not None and wire not in WIRES:
        raise ServingError(f"unknown wire format '{wire}' ({', '.join(WIRES)}, or none: f32)")
    model = read_model(directory)
    model.check_chips(chips)
    options = Options(chips, max_positions, batch, stage, logits, wire)
    cache_outputs = [f"present_{kind}.{i}" for i in range(layers(model)) for kind in KV]
    if backend in ("interpreter", "iree"):
        weights = open_model_dir(Path(directory))
        if backend == "iree":
            from tp_dialect.runtime.iree_session import IreeSession

            session: Session = IreeSession(weights, cache_outputs)
        else:
            session = Session(weights, cache_outputs)
        served = Model(model, Path(directory), options, session, session.prepare)
        _check(served, weights)
        return served
    if backend == "mpi":
        from tp_dialect.runtime.mpi_session import MpiSession

        ctx = tp_context()

        def parse(text: str) -> ModuleOp:
            return Parser(ctx, text).parse_module()

        mpi = MpiSession(
            parse, lambda: open_model_dir(Path(directory)), cache_outputs, engine=engine
        )
        if mpi.rank != 0:
            # Rank 0 checks the weights first and says whether serving starts.
            if mpi.told() is None:  # asleep while rank 0 builds and checks
                mpi.serve()
            return None
        served = Model(model, Path(directory), options, mpi, mpi.prepare)
        try:
            _check(served, open_model_dir(Path(directory)))
        except Exception:
            mpi.tell("stop")  # the serving ranks end instead of waiting
            raise
        mpi.tell(None)
        return served
    raise ServingError(f"unknown backend '{backend}' (interpreter, iree or mpi)")


def _check(model: Model, weights: ModelWeights) -> None:
    """Every tensor checked from the headers before anything is read or run: the decode
    program reads every weight the model has (a prefill reads the same ports)."""
    weights.check(model.program("decode", 1))


KV = ("key", "value")


def layers(model: Pretrained) -> int:
    """The model's decoder layers (each hands back ``present_key.i`` and ``present_value.i``:
    the caches a session keeps on its chips)."""
    config = model.config
    return int(config.get("num_hidden_layers", config.get("n_layer", 0)))


def token_ids(config: Mapping[str, Any], directory: Path) -> tuple[tuple[int, ...], int | None]:
    """The ids greedy generation stops at and pads with, read as transformers' ``generate``
    reads them: from ``generation_config.json`` when the directory has one, else from the
    model's config."""
    path = directory / "generation_config.json"
    if path.is_file():
        try:
            config = json.loads(path.read_text())
        except (OSError, ValueError) as err:
            raise ServingError(f"cannot read {path}: {err}") from None
    eos = config.get("eos_token_id")
    stops = () if eos is None else tuple(int(e) for e in np.atleast_1d(eos))
    pad = config.get("pad_token_id")
    return stops, None if pad is None else int(pad)
