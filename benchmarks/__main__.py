"""Run every benchmark side by side in one process and print its figures."""

from __future__ import annotations

from benchmarks import (
    decode_step,
    machine_sweep,
    model_qwen3,
    outline,
    parse_print,
    pass_growth,
    passes_scaling,
    relay_scaling,
    serving,
    split,
)


def main() -> None:
    parse_print.main()
    decode_step.main()
    passes_scaling.main()
    pass_growth.main()
    relay_scaling.main()
    split.main()
    outline.main()
    model_qwen3.main()
    machine_sweep.main()
    serving.main()


if __name__ == "__main__":
    main()
