"""tp-gen --from-pretrained --chips N: the unsharded step programs split by each family's
Hugging Face plan (tp-split, plans llama and gpt2_lm) give the reference's greedy ids and
logits at every step, N = 2 and 4, a vocab none of them divides with a tied head included.
(Needs the plans and styles of issue 24's tp-split work: embedding_rowwise,
colwise_gather_output, the argmax through tp.maxloc.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import hf_models
import pytest
from test_hf_programs import check_against_reference


@pytest.mark.parametrize("chips", [2, 4])
@pytest.mark.parametrize("model_type", hf_models.FAMILIES)
@pytest.mark.parametrize(
    "overrides",
    [
        {"dtype": "bfloat16"},
        {"vocab_size": hf_models.ODD_VOCAB, "tie_word_embeddings": True},
    ],
)
def test_split_steps_equal_the_reference(
    tmp_path: Path, chips: int, model_type: str, overrides: dict[str, Any]
) -> None:
    directory = hf_models.write_model(tmp_path / model_type, model_type, **overrides)
    check_against_reference(directory, 2, 7, chips)
