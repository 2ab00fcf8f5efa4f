"""The shard-obligation certificate: tp-verify's stamp, bound to a digest of what it checked.

The digest covers the program's dataflow and placement — every op's name, which earlier
values it reads, the chips its values live on, tp ops' slices and sections' chips — so a pass
that moves work between chips makes the certificate stale, while one that only renames
values does not. ``tp-run`` warns on a missing or stale certificate.
"""

from __future__ import annotations

import hashlib

from xdsl.dialects.builtin import DictionaryAttr, ModuleOp, StringAttr
from xdsl.ir import SSAValue

from tp_dialect.attrs import chip_of
from tp_dialect.ops import AllReduceOp, SectionOp, ShardOp, TransferOp, UnshardOp

CERTIFICATE_ATTR = "tp.certificate"
OBLIGATION = "shard-obligation"


def digest(module: ModuleOp) -> str:
    """A hash of ``module``'s dataflow and placement (not of names or printing)."""
    ids: dict[SSAValue, int] = {}
    h = hashlib.sha256()
    for op in module.walk():
        for region in op.regions:
            for block in region.blocks:
                for arg in block.args:
                    ids[arg] = len(ids)
        parts = [op.name, ",".join(str(ids.get(v, -1)) for v in op.operands)]
        parts.append(",".join(str(chip_of(r.type)) for r in op.results))
        if isinstance(op, SectionOp):
            parts.append(str(op.chip_list))
        elif isinstance(op, ShardOp | UnshardOp | TransferOp | AllReduceOp):
            parts.append(str(sorted((k, str(v)) for k, v in op.properties.items())))
        h.update("|".join(parts).encode())
        h.update(b"\n")
        for r in op.results:
            ids[r] = len(ids)
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
