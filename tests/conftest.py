"""Shared fixtures: an xDSL context that knows every upstream dialect and tp, and one IREE
module cache for the whole run."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from tiers import read_slow
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


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--tier-contexts",
        action="store_true",
        help="label the coverage of every subprocess a test starts (tools, MPI ranks) with the "
        "test's id, as pytest-cov's --cov-context=test labels the test's own lines "
        "(make tiers)",
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Under --tier-contexts, a subprocess's coverage is recorded with the running test's id as
    its static context: coverage hands its configuration to subprocesses through one
    environment variable, read when the subprocess starts."""
    config = os.environ.get("COVERAGE_PROCESS_CONFIG")
    if not item.config.getoption("--tier-contexts") or config is None:
        yield
        return
    data = json.loads(base64.b64decode(config))
    data["context"] = item.nodeid
    os.environ["COVERAGE_PROCESS_CONFIG"] = base64.b64encode(json.dumps(data).encode()).decode()
    try:
        yield
    finally:
        os.environ["COVERAGE_PROCESS_CONFIG"] = config


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "slow: left to `make test-slow` (listed in tests/slow.txt; see tests/tiers.py)"
    )


@pytest.hookimpl(tryfirst=True)  # before -m reads the markers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests tests/slow.txt lists; on a whole-suite run, a listed id that names no
    test is an error (a renamed slow test would otherwise move to `make test` unseen)."""
    slow = read_slow()
    for item in items:
        if item.nodeid in slow:
            item.add_marker(pytest.mark.slow)
    if config.args_source == pytest.Config.ArgsSource.TESTPATHS:
        stale = sorted(slow - {item.nodeid for item in items})
        if stale:
            raise pytest.UsageError(
                f"tests/slow.txt lists {len(stale)} ids that name no test, e.g. {stale[0]}"
            )
