"""Shared fixtures: an xDSL context that knows every upstream dialect and tp."""

from __future__ import annotations

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
