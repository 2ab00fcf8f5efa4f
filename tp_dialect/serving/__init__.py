"""Serving: a Hugging Face model directory in, greedy tokens out, on N chips (`load`)."""

from tp_dialect.serving.model import Model, Options, ServingError, load

__all__ = ["Model", "Options", "ServingError", "load"]
