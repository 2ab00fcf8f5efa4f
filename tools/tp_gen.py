"""tp-gen: write a model's decode step as tp IR (Megatron split over N chips, or unsharded).

``tp-gen qwen3 --preset qwen3-8b --layers 1 --chips 4 -o layer.mlir [--manifest m.json]``
``tp-gen gpt2 --preset gpt2 --unsharded -o gpt2.mlir`` (GPT-2 is generated unsharded only)
``--outline``: one ``func.func private @layer`` that ``@decode`` calls once a layer, the same
ports (``tp-opt --tp-inline`` gives the flat program back)
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from tp_dialect.analysis.manifest import read_manifest
from tp_dialect.frontend import gpt2, qwen3
from tp_dialect.frontend.blocks import GenError
from tp_dialect.frontend.bounds import positive
from tp_dialect.frontend.models import ModelConfig, generate
from tp_dialect.tools.common import ToolParser, UserError, check_writable, run_tool, write_output
from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context

_DIMS = ("hidden", "heads", "kv_heads", "head_dim", "intermediate")
# The qwen3 flags a GPT-2 has no use for (no grouped KV heads, head_dim is hidden / heads,
# c_attn is already one fused tensor, no split to fold): refused rather than ignored.
_NOT_GPT2 = ("kv_heads", "head_dim", "fused_qkv", "fused_gate_up", "fold")
_QWEN3_CHIPS = 2  # qwen3's default N


def parser() -> argparse.ArgumentParser:
    """tp-gen's command line: the family, its preset and overrides, the split, the outputs."""
    p = ToolParser(prog="tp-gen", description="Write a tensor-parallel decode step as tp IR.")
    p.add_argument("model", choices=["qwen3", "gpt2"], help="the model family to generate")
    p.add_argument(
        "--preset",
        choices=sorted({*qwen3.PRESETS, *gpt2.PRESETS}),
        default="tiny",
        help="qwen3: tiny, qwen3-8b; gpt2: tiny, gpt2",
    )
    p.add_argument("--layers", type=int, default=1)
    p.add_argument(
        "--chips",
        type=int,
        default=None,
        help=f"N, the chips to split over (qwen3; default {_QWEN3_CHIPS})",
    )
    p.add_argument("--batch", type=int, default=None)
    p.add_argument("--max-positions", type=int, default=None, help="KV cache length")
    notes = {"kv_heads": " (qwen3)", "head_dim": " (qwen3)", "intermediate": " (gpt2: 4*hidden)"}
    for dim in _DIMS:
        p.add_argument(
            f"--{dim.replace('_', '-')}",
            type=int,
            default=None,
            help=f"override the preset's {dim}{notes.get(dim, '')}",
        )
    p.add_argument(
        "--dtype",
        choices=["f32", "bf16"],
        default="f32",
        help="element type of the weights (activations are f32)",
    )
    p.add_argument(
        "--unsharded", action="store_true", help="the plain single-chip program (gpt2: required)"
    )
    p.add_argument(
        "--fold",
        action="store_true",
        help="spell each all-reduce as the seed's left fold of adds (qwen3)",
    )
    p.add_argument(
        "--fused-qkv",
        action="store_true",
        help="one qkv_proj checkpoint tensor; each chip's slice is 3 ranges (qwen3)",
    )
    p.add_argument(
        "--fused-gate-up",
        action="store_true",
        help="one gate_up_proj checkpoint tensor; each chip's slice is 2 ranges (qwen3)",
    )
    p.add_argument(
        "--outline",
        action="store_true",
        help="write one @layer function that @decode calls once per layer (same ports; "
        "tp-opt --tp-inline gives the flat program back)",
    )
    p.add_argument("-o", "--output", default=None, help="output file (default: stdout)")
    p.add_argument("--manifest", default=None, help="also write the manifest as JSON here")
    return p


def config_from(args: argparse.Namespace) -> ModelConfig:
    """The config the flags ask for, of the family ``args.model`` names. Raises GenError
    for a flag that family has no use for, or a config it refuses (either family by the
    same bounds, `tp_dialect.frontend.bounds`, before anything is written)."""
    if args.chips is not None:
        positive("chips", args.chips)
        if args.unsharded and args.chips > 1:
            raise GenError(
                f"--unsharded writes the single-chip program: --chips {args.chips} does not "
                f'apply (tp-opt --tp-split="chips=N plan={args.model}" splits it)'
            )
    if args.model == "gpt2":
        return gpt2_config_from(args)
    return qwen3_config_from(args)


def qwen3_config_from(args: argparse.Namespace) -> qwen3.Qwen3Config:
    """The Qwen3 config the flags ask for (split over ``--chips``, or unsharded)."""
    overrides: dict[str, int | str | bool] = {
        "layers": args.layers,
        "chips": _QWEN3_CHIPS if args.chips is None else args.chips,
        "dtype": args.dtype,
        "fold": args.fold,
        "fused_qkv": args.fused_qkv,
        "fused_gate_up": args.fused_gate_up,
    }
    for name in (*_DIMS, "batch", "max_positions"):
        if (value := getattr(args, name)) is not None:
            overrides[name] = value
    cfg = qwen3.Qwen3Config.preset(args.preset, **overrides)
    return cfg.unsharded() if args.unsharded else cfg


def gpt2_config_from(args: argparse.Namespace) -> gpt2.GPT2Config:
    """The GPT-2 config the flags ask for: unsharded only. Raises GenError for a qwen3-only
    flag, and for a split (no --unsharded, or --chips above 1), which is tp-split's job."""
    for name in _NOT_GPT2:
        if getattr(args, name) is not None and getattr(args, name) is not False:
            raise GenError(f"--{name.replace('_', '-')} does not apply to gpt2")
    if not args.unsharded:
        raise GenError(
            "tp-gen writes gpt2 unsharded only (--unsharded): the split program comes from "
            'tp-opt --tp-split="chips=N plan=gpt2"'
        )
    overrides: dict[str, int | str] = {"layers": args.layers, "dtype": args.dtype}
    for name in ("hidden", "heads", "intermediate", "batch", "max_positions"):
        if (value := getattr(args, name)) is not None:
            overrides[name] = value
    return gpt2.GPT2Config.preset(args.preset, **overrides)


def _main(argv: Sequence[str] | None) -> int:
    args = parser().parse_args(argv)
    check_writable(args.output, args.manifest)
    cfg = config_from(args)
    text = generate(cfg, outline=args.outline)
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
