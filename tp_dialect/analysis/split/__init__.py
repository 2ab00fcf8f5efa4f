"""tp-split's plan: a Hugging Face tensor-parallel plan, and how it cuts each tensor."""
