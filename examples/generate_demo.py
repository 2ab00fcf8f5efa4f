"""make demo's serving part: a built-in tiny Qwen3 directory, 16 greedy tokens on 4 chips.

Writes a tiny Hugging Face Qwen3 directory (``config.json`` + ``model.safetensors``, seeded
random weights, as transformers' ``save_pretrained`` lays them out: `tests/hf_models.py`),
generates 16 tokens with ``tp-generate`` on 4 chips in this process and as 4 MPI ranks, and
prints them beside the ids of the tests' independent plain-numpy implementation of
transformers' ``Qwen3ForCausalLM`` greedy generation (`tests/hf_reference.py`, which imports
nothing from tp). Exit 1 if any differ.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import hf_models  # noqa: E402  (the tests' model writer: independent of tp)
import hf_reference  # noqa: E402

TOKENS = 16
PROMPT = [[5, 17, 42, 8, 61, 23, 11]]


def _generate(model: Path, report: Path, *extra: str) -> list[int]:
    tool = str(Path(sys.executable).parent / "tp-generate")
    ids = ",".join(map(str, PROMPT[0]))
    cmd = [tool, str(model), "--prompt-ids", ids, "--max-new-tokens", str(TOKENS), *extra]
    cmd += ["--report", str(report)]
    print("$", " ".join(cmd[0:1] + [Path(c).name if c == tool else c for c in cmd[1:]]))
    subprocess.run(cmd, check=True)
    return json.loads(report.read_text())["ids"][0]


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "build/demo")
    model = hf_models.write_model(out / "tiny-qwen3", "qwen3", seed=0)
    print(f"wrote {model}: a tiny Qwen3ForCausalLM (config.json + model.safetensors)")
    want = hf_reference.Reference(model).generate(PROMPT, TOKENS)[0][0].tolist()
    with tempfile.TemporaryDirectory() as tmp:
        four = _generate(model, Path(tmp) / "four.json", "--chips", "4")
        ranks = _generate(model, Path(tmp) / "mpi.json", "--mpi", "4")
    print(f"{'numpy reference':>22}: {' '.join(map(str, want))}")
    print(f"{'tp, 4 chips':>22}: {' '.join(map(str, four))}")
    print(f"{'tp, 4 MPI ranks':>22}: {' '.join(map(str, ranks))}")
    same = four == want and ranks == want
    print("the same tokens" if same else "THE TOKENS DIFFER")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
