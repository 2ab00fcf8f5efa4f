"""tp-gen: write a model's decode step as tp IR (Megatron split over N chips, or unsharded).

``tp-gen qwen3 --preset qwen3-8b --layers 1 --chips 4 -o layer.mlir [--manifest m.json]``
``tp-gen gpt2 --preset gpt2 --unsharded -o gpt2.mlir`` (GPT-2 is generated unsharded only)
``--outline``: one ``func.func private @layer`` that ``@decode`` calls once a layer, the same
ports (``tp-opt --tp-inline`` gives the flat program back)
``tp-gen --from-pretrained DIR --step prefill --prompt-len 7 --batch 2 --max-positions 64
[--logits] [--chips N | --unsharded] -o prefill.mlir``: a Hugging Face model directory's whole
step program (embedding, layers, head, greedy argmax), written unsharded by its family
(`tp_dialect.frontend.registry`) and, over N > 1 chips, split by the family's HF plan
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from tp_dialect.analysis.certify.manifest import read_manifest
from tp_dialect.frontend import gpt2, qwen3
from tp_dialect.frontend.blocks import GenError
from tp_dialect.frontend.bounds import positive
from tp_dialect.frontend.families import ModelConfig, generate
from tp_dialect.frontend.registry import read_model
from tp_dialect.frontend.split import split_text
from tp_dialect.tools.common import ToolParser, UserError, check_writable, run_tool, write_output
from tp_dialect.tools.source import parse_module
from tp_dialect.universe import tp_context

_DIMS = ("hidden", "heads", "kv_heads", "head_dim", "intermediate")
# The qwen3 flags a GPT-2 has no use for (no grouped KV heads, head_dim is hidden / heads,
# c_attn is already one fused tensor, no split to fold): refused rather than ignored.
_NOT_GPT2 = ("kv_heads", "head_dim", "fused_qkv", "fused_gate_up", "fold")
_QWEN3_CHIPS = 2  # qwen3's default N
# The flags of the decode stacks a model directory states itself (or has no use for), and
# those only a model directory takes: each refused where it does not apply.
_STACK_ONLY = (
    "preset",
    "layers",
    *_DIMS,
    "dtype",
    "fold",
    "fused_qkv",
    "fused_gate_up",
    "outline",
    "manifest",
)
_PRETRAINED_ONLY = ("step", "prompt_len", "logits")


def parser() -> argparse.ArgumentParser:
    """tp-gen's command line: the family, its preset and overrides, the split, the outputs."""
    p = ToolParser(prog="tp-gen", description="Write a tensor-parallel decode step as tp IR.")
    p.add_argument(
        "model",
        nargs="?",
        choices=["qwen3", "gpt2"],
        help="the decode-stack family to generate (not with --from-pretrained)",
    )
    p.add_argument(
        "--from-pretrained",
        metavar="DIR",
        default=None,
        help="a Hugging Face model directory (config.json): write its whole-model step",
    )
    p.add_argument(
        "--step",
        choices=["prefill", "decode"],
        default=None,
        help="with --from-pretrained: the prompt step (@prefill) or one token (@decode)",
    )
    p.add_argument(
        "--prompt-len",
        type=int,
        default=None,
        help="with --from-pretrained --step prefill: the prompt's tokens S (default 1)",
    )
    p.add_argument(
        "--logits",
        action="store_true",
        help="with --from-pretrained: also return the last position's logits",
    )
    p.add_argument(
        "--preset",
        choices=sorted({*qwen3.PRESETS, *gpt2.PRESETS}),
        default=None,
        help="qwen3: tiny, qwen3-8b; gpt2: tiny, gpt2 (default tiny)",
    )
    p.add_argument("--layers", type=int, default=None)
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
        default=None,
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
    for name in _PRETRAINED_ONLY:
        if getattr(args, name) not in (None, False):
            raise GenError(f"--{name.replace('_', '-')} applies only with --from-pretrained")
    if args.model == "gpt2":
        return gpt2_config_from(args)
    return qwen3_config_from(args)


def qwen3_config_from(args: argparse.Namespace) -> qwen3.Qwen3Config:
    """The Qwen3 config the flags ask for (split over ``--chips``, or unsharded)."""
    overrides: dict[str, int | str | bool] = {
        "layers": 1 if args.layers is None else args.layers,
        "chips": _QWEN3_CHIPS if args.chips is None else args.chips,
        "dtype": args.dtype or "f32",
        "fold": args.fold,
        "fused_qkv": args.fused_qkv,
        "fused_gate_up": args.fused_gate_up,
    }
    for name in (*_DIMS, "batch", "max_positions"):
        if (value := getattr(args, name)) is not None:
            overrides[name] = value
    cfg = qwen3.Qwen3Config.preset(args.preset or "tiny", **overrides)
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
    overrides: dict[str, int | str] = {
        "layers": 1 if args.layers is None else args.layers,
        "dtype": args.dtype or "f32",
    }
    for name in ("hidden", "heads", "intermediate", "batch", "max_positions"):
        if (value := getattr(args, name)) is not None:
            overrides[name] = value
    return gpt2.GPT2Config.preset(args.preset or "tiny", **overrides)


def pretrained_text(args: argparse.Namespace) -> str:
    """The whole-model step program of ``--from-pretrained DIR`` the flags ask for: the
    family's unsharded program, split by the family's HF plan over ``--chips N > 1``.
    Raises GenError for a flag of the decode stacks, a directory or config refused, or a
    dim N does not divide."""
    for name in _STACK_ONLY:
        if getattr(args, name) not in (None, False):
            raise GenError(f"--{name.replace('_', '-')} does not apply with --from-pretrained")
    chips = 1 if args.chips is None else args.chips
    positive("chips", chips)
    if args.unsharded and chips > 1:
        raise GenError(
            f"--unsharded writes the single-chip program: --chips {chips} does not apply"
        )
    kind = args.step or "prefill"
    if kind == "decode" and args.prompt_len not in (None, 1):
        raise GenError("--prompt-len applies to --step prefill (a decode step reads one token)")
    model = read_model(args.from_pretrained)
    if chips > 1:
        model.check_chips(chips)
    step = model.step(kind, args.prompt_len or 1, args.batch or 1, args.max_positions, args.logits)
    text = model.write(step)
    if chips == 1:
        return text
    return split_text(text, chips, model.entry.plan)


def _main(argv: Sequence[str] | None) -> int:
    args = parser().parse_args(argv)
    check_writable(args.output, args.manifest)
    if (args.model is None) == (args.from_pretrained is None):
        raise GenError("name one model family (qwen3, gpt2) or --from-pretrained DIR")
    if args.from_pretrained is not None:
        write_output(args.output, pretrained_text(args))
        return 0
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
