"""A certificate tp wrote before the all-reduce algorithm became an enum attribute stays
valid: the digest counts an algorithm by its name, as when it was a string."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from helpers import CTX
from xdsl.parser import Parser

from tp_dialect.certificate import status
from tp_dialect.collectives import AllReduceAlgorithmAttr

OLD = Path(__file__).parent / "data" / "certified_ring.mlir"


def test_an_older_certificate_stays_valid() -> None:
    module = Parser(CTX, OLD.read_text(encoding="utf-8"), str(OLD)).parse_module()
    ring = [o for o in module.walk() if o.name == "tp.allreduce"]
    assert isinstance(ring[0].properties["algorithm"], AllReduceAlgorithmAttr)
    assert status(module) == "valid"


def test_the_algorithm_still_counts() -> None:
    module = Parser(CTX, OLD.read_text(encoding="utf-8"), str(OLD)).parse_module()
    (reduce,) = [o for o in module.walk() if o.name == "tp.allreduce"]
    reduce.properties["algorithm"] = AllReduceAlgorithmAttr.named("oneshot")
    assert status(module) == "stale"
    reduce.properties["algorithm"] = AllReduceAlgorithmAttr.named("ring")
    assert status(module) == "valid"


def test_the_digest_is_the_same_whatever_the_kept_texts_hold(monkeypatch: Any) -> None:
    """The attribute texts kept across digests are a cache only: with room for 3 texts (so
    it is emptied over and over) or none kept at all, every program digests the same."""
    from helpers import program, tiny

    import tp_dialect.certificate as certificate

    modules = [program(tiny(chips=n, layers=1)) for n in (1, 2, 4)]
    want = [certificate.digest(m) for m in modules]
    monkeypatch.setattr(certificate, "_TEXTS_KEPT", 3)
    assert [certificate.digest(m) for m in modules] == want
    monkeypatch.setattr(certificate, "_TEXT_KEPT", 0)
    certificate._TEXTS.clear()
    assert [certificate.digest(m) for m in reversed(modules)] == want[::-1]
    assert not certificate._TEXTS


def test_a_digest_does_not_depend_on_what_was_digested_before() -> None:
    """Two dictionaries equal but written in other orders print apart: a module's digest is
    the same whether or not the other was digested first in this process."""
    import tp_dialect.certificate as certificate

    def module(order: str) -> Any:
        text = (
            "builtin.module {\n  func.func @f(%x: f32) -> f32 attributes "
            f"{{tp.info = {{{order}}}}} {{\n    func.return %x : f32\n  }}\n}}"
        )
        return Parser(CTX, text).parse_module()

    certificate._TEXTS.clear()
    alone = certificate.digest(module("b = 2, a = 1"))
    certificate._TEXTS.clear()
    certificate.digest(module("a = 1, b = 2"))
    assert certificate.digest(module("b = 2, a = 1")) == alone
