"""Shared fixtures: an xDSL context that knows every upstream dialect and tp, and one IREE
module cache for the whole run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects import get_all_dialects

from tp_dialect.universe import register_tp


@pytest.fixture
def ctx() -> Context:
    context = Context()
    for name, factory in get_all_dialects().items():
        context.register_dialect(name, factory)
    register_tp(context)
    return context


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An IREE module cache that every test file and every xdist worker of this run shares
    (one compile per distinct segment per run, not per file and worker; the cache's entries
    are written atomically, so workers compiling the same segment at once is safe). Tests
    that count compiles make their own cache."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):  # each worker's basetemp is under the run's
        base = base.parent
    path = base / "iree-cache"
    path.mkdir(exist_ok=True)
    return path
