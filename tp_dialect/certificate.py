"""The shard-obligation certificate: tp-verify's stamp, bound to a digest of what it checked.

The digest covers everything the program computes and where — every op's name, which earlier
values it reads, the types of every value it defines (arguments included; a chip is part of a
type), every property and attribute (slices, sections' chips, algorithms) — so any change to
what was checked makes the certificate stale, while renaming values does not. ``tp-run``
warns on a missing or stale certificate.
"""

from __future__ import annotations

import hashlib

from xdsl.dialects.builtin import (
    DictionaryAttr,
    IntegerType,
    ModuleOp,
    NoneAttr,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Operation, ParametrizedAttribute, SSAValue

from tp_dialect.attrs import ChipAttr
from tp_dialect.collectives import AllReduceAlgorithmAttr, MaxLocAlgorithmAttr

CERTIFICATE_ATTR = "tp.certificate"
OBLIGATION = "shard-obligation"


_TEXTS: dict[Attribute, str] = {}
_TEXTS_KEPT = 20_000  # entries
_TEXT_KEPT = 200  # characters: a long constant's text is not kept


def _shared(attr: Attribute) -> bool:
    """Whether ``attr``'s text may be kept across digests: a string, a type without
    parameters (``f32``, ``index``), an integer type, or a tensor type of those with no
    encoding or a chip's, which print alike whenever they are equal (a dictionary equal to
    another may list its entries in another order)."""
    if isinstance(attr, StringAttr | IntegerType) or (
        isinstance(attr, ParametrizedAttribute) and not attr.parameters
    ):
        return True
    return (
        isinstance(attr, TensorType)
        and isinstance(attr.encoding, NoneAttr | ChipAttr)
        and _shared(attr.element_type)
    )


def digest(module: ModuleOp) -> str:
    """A hash of everything ``module`` computes and where: its structure (which op sits in
    which block of which region), every op's name, which values it reads (by definition,
    also when a use comes before its definition), the types of what it defines (a chip
    encoding is part of a type, so moving an argument or a value to another chip changes the
    digest), its properties and its attributes (apart). Value names and printing do not
    count; the certificate itself does not either."""
    ids: dict[SSAValue, int] = {}
    for op in module.walk():  # every value numbered first: operands may refer forward
        for region in op.regions:
            for block in region.blocks:
                ids.update((a, len(ids) + i) for i, a in enumerate(block.args))
        ids.update((r, len(ids) + i) for i, r in enumerate(op.results))
    # Attributes are immutable: each equal value printed once, looked up by identity first
    # (hashing a type hashes all its parameters; the module holds every attribute it names
    # alive while this runs, so no id is reused). Types and strings (`_shared`) are kept by
    # value across digests too (`_TEXTS`: a pipeline digests each stage twice).
    if len(_TEXTS) >= _TEXTS_KEPT:  # bounded: a long-lived process sees many programs
        _TEXTS.clear()
    local: dict[Attribute, str] = {}
    seen: dict[int, str] = {}

    def text(attr: Attribute) -> str:
        if (t := seen.get(id(attr))) is None:
            texts = _TEXTS if _shared(attr) else local
            if (t := texts.get(attr)) is None:
                # An algorithm counts by its name, as when it was a string: certificates
                # written before it became an enum attribute stay valid.
                named = isinstance(attr, AllReduceAlgorithmAttr | MaxLocAlgorithmAttr)
                t = str(StringAttr(attr.data.value)) if named else str(attr)
                if texts is local or len(t) <= _TEXT_KEPT:
                    texts[attr] = t
            seen[id(attr)] = t
        return t

    h = hashlib.sha256()

    def visit(op: Operation) -> None:
        parts = [op.name, ",".join(str(ids.get(v, -1)) for v in op.operands)]
        parts.append(",".join(text(r.type) for r in op.results))
        parts += sorted(f"p:{k}={text(v)}" for k, v in op.properties.items())
        parts += sorted(
            f"a:{k}={text(v)}" for k, v in op.attributes.items() if k != CERTIFICATE_ATTR
        )
        h.update("|".join(parts).encode())
        for region in op.regions:
            h.update(b"{")
            for block in region.blocks:
                h.update(("^" + ",".join(text(a.type) for a in block.args) + ":").encode())
                for inner in block.ops:
                    visit(inner)
            h.update(b"}")
        h.update(b"\n")

    visit(module)
    return h.hexdigest()


def stamp(module: ModuleOp) -> None:
    """Record that ``module`` as it stands meets the shard obligation."""
    module.attributes.pop(CERTIFICATE_ATTR, None)
    module.attributes[CERTIFICATE_ATTR] = DictionaryAttr(
        {"checked": StringAttr(OBLIGATION), "digest": StringAttr(digest(module))}
    )


def drop(module: ModuleOp) -> None:
    """Forget the certificate (a pass changed what it vouched for)."""
    module.attributes.pop(CERTIFICATE_ATTR, None)


def status(module: ModuleOp) -> str:
    """``valid``, ``missing`` or ``stale``."""
    cert = module.attributes.get(CERTIFICATE_ATTR)
    if not isinstance(cert, DictionaryAttr):
        return "missing"
    recorded = cert.data.get("digest")
    if not isinstance(recorded, StringAttr):
        return "stale"
    return "valid" if recorded.data == digest(module) else "stale"


class kept:
    """For a pass that keeps the obligation (it moves no work between chips): a certificate
    valid before the pass is re-stamped after it, so it stays valid; any other stays as is."""

    def __init__(self, module: ModuleOp) -> None:
        self.module = module

    def __enter__(self) -> None:
        self.was_valid = status(self.module) == "valid"

    def __exit__(self, *exc: object) -> None:
        if self.was_valid and exc[0] is None:
            stamp(self.module)
