"""tp-gen: write a model's decode step as tp IR (Megatron split over N chips, or unsharded).

``tp-gen qwen3 --preset qwen3-8b --layers 1 --chips 4 -o layer.mlir [--manifest m.json]``
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from tp_dialect.analysis.manifest import read_manifest
from tp_dialect.frontend.qwen3 import PRESETS, GenError, Qwen3Config, generate
from tp_dialect.tools.common import UserError, run_tool, write_output
from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context

_DIMS = ("hidden", "heads", "kv_heads", "head_dim", "intermediate")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tp-gen", description="Write a tensor-parallel decode step as tp IR."
    )
    p.add_argument("model", choices=["qwen3"], help="the model family to generate")
    p.add_argument("--preset", choices=sorted(PRESETS), default="tiny")
    p.add_argument("--layers", type=int, default=1)
    p.add_argument("--chips", type=int, default=2, help="N, the chips to split over")
    p.add_argument("--batch", type=int, default=None)
    p.add_argument("--max-positions", type=int, default=None, help="KV cache length")
    for dim in _DIMS:
        p.add_argument(
            f"--{dim.replace('_', '-')}",
            type=int,
            default=None,
            help=f"override the preset's {dim}",
        )
    p.add_argument(
        "--dtype",
        choices=["f32", "bf16"],
        default="f32",
        help="element type of the weights (activations are f32)",
    )
    p.add_argument("--unsharded", action="store_true", help="the plain single-chip program")
    p.add_argument(
        "--fold", action="store_true", help="spell each all-reduce as the seed's left fold of adds"
    )
    p.add_argument(
        "--fused-qkv",
        action="store_true",
        help="one qkv_proj checkpoint tensor; each chip's slice is 3 ranges",
    )
    p.add_argument(
        "--fused-gate-up",
        action="store_true",
        help="one gate_up_proj checkpoint tensor; each chip's slice is 2 ranges",
    )
    p.add_argument("-o", "--output", default=None, help="output file (default: stdout)")
    p.add_argument("--manifest", default=None, help="also write the manifest as JSON here")
    return p


def config_from(args: argparse.Namespace) -> Qwen3Config:
    overrides: dict[str, int | str | bool] = {
        "layers": args.layers,
        "chips": args.chips,
        "dtype": args.dtype,
        "fold": args.fold,
        "fused_qkv": args.fused_qkv,
        "fused_gate_up": args.fused_gate_up,
    }
    for name in (*_DIMS, "batch", "max_positions"):
        if (value := getattr(args, name)) is not None:
            overrides[name] = value
    cfg = Qwen3Config.preset(args.preset, **overrides)
    return cfg.unsharded() if args.unsharded else cfg


def _main(argv: Sequence[str] | None) -> int:
    args = parser().parse_args(argv)
    cfg = config_from(args)
    text = generate(cfg)
    if args.manifest:
        module, _ = parse_module(tp_context(), text, args.output or "<tp-gen>")
        manifest = json.dumps(read_manifest(module).to_json(), indent=1)
        if args.manifest == args.output:
            raise UserError("--manifest and -o name the same file")
        write_output(args.output, text)
        write_output(args.manifest, manifest + "\n")
    else:
        write_output(args.output, text)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: 0 on success, 1 with a one-line reason when a config cannot be split."""
    return run_tool("tp-gen", _main, argv, (GenError,))


if __name__ == "__main__":
    sys.exit(main())
