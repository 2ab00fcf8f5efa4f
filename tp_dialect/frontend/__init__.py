"""Frontends: generators that write tensor-parallel programs as tp IR."""
