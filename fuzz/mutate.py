"""Text mutations a new user makes to a tp program, each a pure function of a seeded
``random.Random`` and the text.

Every mutator takes ``(rng, text, vocab)`` and returns ``(new_text, description)``, or None
when the text offers it no place (then another is drawn). `mutate_text` applies one to three
of them. The mutators: lines deleted, duplicated, swapped, moved, or spliced in from another
program; chip indices changed (``#tp.chip<k>``, ``on [..]``, ``from a to b``, ``tp.chips =
N`` — huge values such as 2147483648 and 65536 included); shapes (a dimension, the rank, the
element type); slice ranges, axes and full shapes; any integer; SSA names swapped or a use
renamed; the text truncated; garbage tokens inserted; tokens deleted or duplicated; ops
renamed; string literals left unterminated or changed; symbols renamed.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass

# Values a user (or a typo) puts where a small integer was.
INTERESTING_INTS: tuple[int, ...] = (
    0,
    1,
    2,
    3,
    4,
    -1,
    7,
    8,
    15,
    16,
    17,
    255,
    65536,
    2147483647,
    2147483648,
    4294967296,
    2**63 - 1,
    2**63,
    2**64,
    10**30,
)
HUGE_CHIPS: tuple[int, ...] = (65536, 2147483648, 2147483647, 4294967296, 2**63 - 1, 10**12)

GARBAGE: tuple[str, ...] = (
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    "<",
    ">",
    ",",
    ":",
    "=",
    "->",
    "%",
    "%0",
    "%x",
    "@",
    "@decode",
    "#",
    "#tp.chip<",
    "#tp.chip<1>",
    "#tp.slice<",
    "^bb0",
    "^bb1:",
    "^3b0",
    "!",
    "?",
    "*",
    "\\",
    "'",
    '"',
    '""',
    "0x",
    "1e999",
    "-0",
    "nan",
    "tp.",
    "tp.yield",
    "func.return",
    "tensor<",
    "tensor<?xf32>",
    "tensor<4xf32, #tp.chip<9>>",
    "affine_map<(d0) -> (d0)>",
    "\x00",
    "\t",
    "é",
    "\u2028",
    "\ufeff",
    "// ",
    "/*",
    "loc(",
    "dense<1.0>",
    "attributes {}",
    "{tp.chips = 2 : i64}",
    "unit",
    "i1",
    "index",
)

BOGUS_OPS: tuple[str, ...] = (
    "tp.frobnicate",
    "tp.allreduc",
    "tp.all_reduce",
    "tp.Shard",
    "linalg.add",
    "linalg.transpose",
    "linalg.matmul",
    "linalg.fill",
    "scf.while",
    "scf.execute_region",
    "func.call",
    "arith.addi",
    "tensor.extract_slice",
    "tensor.insert_slice",
    "test.op",
    "builtin.module",
)

ELEMENT_TYPES: tuple[str, ...] = ("f32", "f16", "bf16", "f64", "i32", "i64", "i1", "index", "f8")


@dataclass(frozen=True)
class Vocabulary:
    """What mutators borrow from the rest of the corpus: op names and lines."""

    op_names: tuple[str, ...] = ()
    lines: tuple[str, ...] = ()


Mutator = Callable[[random.Random, str, Vocabulary], tuple[str, str] | None]


def _lines(text: str) -> list[str]:
    return text.split("\n")


def _replace_span(text: str, start: int, end: int, new: str) -> str:
    return text[:start] + new + text[end:]


def _pick_match(rng: random.Random, pattern: str | re.Pattern[str], text: str) -> re.Match[str]:
    matches = list(re.finditer(pattern, text))
    return rng.choice(matches) if matches else None  # type: ignore[return-value]


def _int_for(rng: random.Random, old: int) -> int:
    pool = [*INTERESTING_INTS, old + 1, old - 1, old * 2, old // 2]
    value = rng.choice(pool)
    return value if value != old else old + 1


def delete_lines(rng: random.Random, text: str, vocab: Vocabulary) -> tuple[str, str] | None:
    """1-3 consecutive lines deleted."""
    lines = _lines(text)
    if len(lines) < 2:
        return None
    i = rng.randrange(len(lines))
    n = rng.choice((1, 1, 1, 2, 3))
    del lines[i : i + n]
    return "\n".join(lines), f"delete lines {i + 1}..{i + n}"


def duplicate_lines(rng: random.Random, text: str, vocab: Vocabulary) -> tuple[str, str] | None:
    """1-5 consecutive lines (sometimes up to 40) duplicated in place."""
    lines = _lines(text)
    i = rng.randrange(len(lines))
    n = rng.choice((1, 1, 2, 3, 5, 40))
    lines[i:i] = lines[i : i + n]
    return "\n".join(lines), f"duplicate lines {i + 1}..{i + n}"


def swap_lines(rng: random.Random, text: str, vocab: Vocabulary) -> tuple[str, str] | None:
    """Two lines swapped."""
    lines = _lines(text)
    if len(lines) < 2:
        return None
    i, j = rng.sample(range(len(lines)), 2)
    lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines), f"swap lines {i + 1} and {j + 1}"


def move_line(rng: random.Random, text: str, vocab: Vocabulary) -> tuple[str, str] | None:
    """A line moved elsewhere."""
    lines = _lines(text)
    if len(lines) < 2:
        return None
    i = rng.randrange(len(lines))
    line = lines.pop(i)
    j = rng.randrange(len(lines) + 1)
    lines.insert(j, line)
    return "\n".join(lines), f"move line {i + 1} to {j + 1}"


def splice_line(rng: random.Random, text: str, vocab: Vocabulary) -> tuple[str, str] | None:
    """A line of another corpus program inserted."""
    if not vocab.lines:
        return None
    lines = _lines(text)
    j = rng.randrange(len(lines) + 1)
    lines.insert(j, rng.choice(vocab.lines))
    return "\n".join(lines), f"splice a foreign line at {j + 1}"


_CHIP_PATTERNS: tuple[str, ...] = (
    r"#tp\.chip<(-?\d+)>",
    r"\bon \[(?:-?\d+, )*(-?\d+)",
    r"\bfrom (-?\d+) to",
    r"\bto (-?\d+) :",
    r"\bchip (-?\d+)",
    r"\bon (-?\d+) ",
    r"\bround (-?\d+)",
    r"\bhalt (-?\d+)",
    r"tp\.link (-?\d+)",
    r"phase (-?\d+)",
    r"tp\.phase = (-?\d+)",
)


def chip_index(rng: random.Random, text: str, vocab: Vocabulary) -> tuple[str, str] | None:
    """A chip index (``#tp.chip<k>``, ``on [..]``, ``from a to b``, ``chip c``, a link,
    halt, round or phase number) changed, to a neighbour or a huge value."""
    rng_patterns = list(_CHIP_PATTERNS)
    rng.shuffle(rng_patterns)
    for pattern in rng_patterns:
        m = _pick_match(rng, pattern, text)
        if m:
            old = int(m.group(1))
            new = rng.choice((old + 1, old - 1, 0, 1, 2, 3, -1, *HUGE_CHIPS))
            new = new if new != old else old + 1
            return _replace_span(text, m.start(1), m.end(1), str(new)), f"chip {old} -> {new}"
    return None


def chip_list(rng: random.Random, text: str, vocab: Vocabulary) -> tuple[str, str] | None:
    """A section's ``on [..]`` list emptied, reversed, repeated or extended."""
    m = _pick_match(rng, r"\bon \[([-\d, ]*)\]", text)
    if not m:
        return None
    chips = [c.strip() for c in m.group(1).split(",") if c.strip()]
    how = rng.choice(("empty", "reverse", "repeat", "extend", "drop"))
    if how == "empty":
        new: list[str] = []
    elif how == "reverse":
        new = chips[::-1]
    elif how == "repeat":
        new = chips + chips[:1]
    elif how == "extend":
        new = [*chips, str(rng.choice((len(chips), 9, 65536, 2147483648)))]
    else:
        new = chips[1:]
    return _replace_span(text, m.start(1), m.end(1), ", ".join(new)), f"on [..] {how}"


def chip_count(rng: random.Random, text: str, vocab: Vocabulary) -> tuple[str, str] | None:
    """``tp.chips = N`` changed (often to a huge N), or the attribute dropped or given a
    non-integer."""
    m = _pick_match(rng, r"tp\.chips = (-?\d+)( : i64)?", text)
    if not m:
        return None
    old = int(m.group(1))
    choice = rng.random()
    if choice < 0.5:
        new = str(rng.choice(HUGE_CHIPS))
    elif choice < 0.8:
        new = str(rng.choice((0, 1, 2, 3, 4, 8, -1, old + 1, old - 1)))
    elif choice < 0.9:
        return _replace_span(text, m.start(), m.end(), 'tp.chips = "2"'), "tp.chips a string"
    else:
        new = str(old) + rng.choice((" : i1", " : index", " : i8", ".5 : f32"))
        return _replace_span(text, m.start(), m.end(), f"tp.chips = {new}"), f"tp.chips {new}"
    return _replace_span(text, m.start(1), m.end(1), new), f"tp.chips {old} -> {new}"


_SHAPE = re.compile(r"(tensor|memref|vector)<((?:\?x|\d+x)*)([a-z]\w*)")


def shape(rng: random.Random, text: str, vocab: Vocabulary) -> tuple[str, str] | None:
    """A shaped type's dimension changed, dropped or added, or its element type changed."""
    m = _pick_match(rng, _SHAPE, text)
    if not m:
        return None
    dims = [d for d in m.group(2).split("x") if d]
    element = m.group(3)
    how = rng.choice(("dim", "dim", "drop", "add", "element", "dynamic"))
    if how == "dim" and dims:
        k = rng.randrange(len(dims))
        old = int(dims[k]) if dims[k] != "?" else 1
        dims[k] = str(rng.choice((0, 1, old + 1, old * 2, max(old - 1, 0), 65536, 2147483648)))
    elif how == "drop" and dims:
        dims.pop(rng.randrange(len(dims)))
    elif how == "add":
        dims.insert(rng.randrange(len(dims) + 1), str(rng.choice((1, 2, 4, 0))))
    elif how == "dynamic" and dims:
        dims[rng.randrange(len(dims))] = "?"
    else:
        element = rng.choice([t for t in ELEMENT_TYPES if t != element])
        how = "element"
    new = m.group(1) + "<" + "".join(d + "x" for d in dims) + element
    return _replace_span(text, m.start(), m.end(), new), f"shape {m.group(0)}... -> {new}..."


def slice_attr(rng: random.Random, text: str, vocab: Vocabulary) -> tuple[str, str] | None:
    """Inside a ``#tp.slice<..>``: the axis, a range's start or length, a full dimension
    changed; a range dropped or repeated; the ranges emptied."""
    m = _pick_match(rng, r"#tp\.slice<[^>]*>", text)
    if not m:
        return None
    body = m.group(0)
    how = rng.choice(("axis", "range", "range", "full", "drop", "repeat", "empty"))
    if how == "axis":
        new = re.sub(r"axis = -?\d+", f"axis = {rng.choice((0, 1, 2, 5, -1, 2147483648))}", body)
    elif how in ("range", "full"):
        where = r"\((-?\d+), (-?\d+)\)" if how == "range" else r"full = \[([^\]]*)\]"
        nums = list(re.finditer(r"-?\d+", body))
        region = re.search(where, body)
        if not region:
            return None
        inside = [n for n in nums if region.start() <= n.start() < region.end()]
        if not inside:
            return None
        n = rng.choice(inside)
        value = _int_for(rng, int(n.group(0)))
        new = body[: n.start()] + str(value) + body[n.end() :]
    elif how in ("drop", "repeat"):
        ranges = re.findall(r"\(-?\d+, -?\d+\)", body)
        if not ranges:
            return None
        keep = ranges[1:] if how == "drop" else ranges + ranges[:1]
        new = re.sub(r"ranges = \[[^\]]*\]", "ranges = [" + ", ".join(keep) + "]", body)
    else:
        new = re.sub(r"ranges = \[[^\]]*\]", "ranges = []", body)
    return _replace_span(text, m.start(), m.end(), new), f"slice {how}"


def integer(rng: random.Random, text: str, vocab: Vocabulary) -> tuple[str, str] | None:
    """Any integer literal replaced by an interesting one."""
    m = _pick_match(rng, r"(?<![\w%#^.])-?\d+(?![\w.])", text)
    if not m:
        return None
    new = _int_for(rng, int(m.group(0)))
    return _replace_span(text, m.start(), m.end(), str(new)), f"int {m.group(0)} -> {new}"


_SSA = re.compile(r"%[A-Za-z_0-9][\w.$-]*")


def swap_ssa(rng: random.Random, text: str, vocab: Vocabulary) -> tuple[str, str] | None:
    """Two SSA names swapped everywhere (definitions and uses)."""
    names = sorted(set(_SSA.findall(text)))
    if len(names) < 2:
        return None
    a, b = rng.sample(names, 2)
    marker = "\x01SWAP\x01"
    new = re.sub(re.escape(a) + r"(?![\w.$-])", marker, text)
    new = re.sub(re.escape(b) + r"(?![\w.$-])", a, new)
    new = new.replace(marker, b)
    return new, f"swap {a} and {b}"


def rename_use(rng: random.Random, text: str, vocab: Vocabulary) -> tuple[str, str] | None:
    """One occurrence of an SSA name replaced by another name of the program, or by one
    that is never defined."""
    uses = list(_SSA.finditer(text))
    if not uses:
        return None
    m = rng.choice(uses)
    names = sorted(set(_SSA.findall(text)) - {m.group(0)})
    new = rng.choice([*names, "%undefined", "%0", "%arg0"]) if names else "%undefined"
    return _replace_span(text, m.start(), m.end(), new), f"use {m.group(0)} -> {new}"


def truncate(rng: random.Random, text: str, vocab: Vocabulary) -> tuple[str, str] | None:
    """The text cut at a random point (a line end, or mid-line)."""
    if not text:
        return None
    if rng.random() < 0.5:
        at = rng.randrange(len(text))
    else:
        ends = [m.end() for m in re.finditer("\n", text)] or [len(text)]
        at = rng.choice(ends)
    return text[:at], f"truncate at {at}/{len(text)}"


def _token_spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in re.finditer(r"[%@#^!]?[\w.$-]+|\"[^\"\n]*\"|\S", text)]


def garbage(rng: random.Random, text: str, vocab: Vocabulary) -> tuple[str, str] | None:
    """A garbage token inserted before a token, or a token replaced by one."""
    spans = _token_spans(text)
    token = rng.choice(GARBAGE)
    if not spans:
        return token + text, f"garbage {token!r} at 0"
    start, end = rng.choice(spans)
    if rng.random() < 0.7:
        return _replace_span(text, start, start, token + " "), f"insert {token!r}"
    return _replace_span(text, start, end, token), f"replace {text[start:end]!r} by {token!r}"


def delete_token(rng: random.Random, text: str, vocab: Vocabulary) -> tuple[str, str] | None:
    """One token deleted."""
    spans = _token_spans(text)
    if not spans:
        return None
    start, end = rng.choice(spans)
    return _replace_span(text, start, end, ""), f"delete {text[start:end]!r}"


def duplicate_token(rng: random.Random, text: str, vocab: Vocabulary) -> tuple[str, str] | None:
    """One token written twice."""
    spans = _token_spans(text)
    if not spans:
        return None
    start, end = rng.choice(spans)
    token = text[start:end]
    return _replace_span(text, end, end, " " + token), f"duplicate {token!r}"


def rename_op(rng: random.Random, text: str, vocab: Vocabulary) -> tuple[str, str] | None:
    """An op's name replaced by another op of the corpus or a misspelt or foreign one."""
    m = _pick_match(rng, r"(?<![\w%@#^!.\"])([a-z_]+\.[a-z_][a-z_.]*)(?=[\s(<{\"])", text)
    if not m or m.group(1).startswith("tp.chip"):
        return None
    pool = [*vocab.op_names, *BOGUS_OPS] if vocab.op_names else list(BOGUS_OPS)
    new = rng.choice(pool)
    if rng.random() < 0.2:
        old = m.group(1)
        k = rng.randrange(len(old))
        new = old[:k] + old[k + 1 :]
    return _replace_span(text, m.start(1), m.end(1), new), f"op {m.group(1)} -> {new}"


def unterminated_string(rng: random.Random, text: str, vocab: Vocabulary) -> tuple[str, str] | None:
    """A string literal's closing quote removed, or a lone ``"`` inserted with a short tail
    (bounded, so that each such input costs little even where the lexer is slow)."""
    strings = list(re.finditer(r"\"[^\"\n]*\"", text))
    if strings and rng.random() < 0.5:
        m = rng.choice(strings)
        return _replace_span(text, m.end() - 1, m.end(), ""), f"unterminate {m.group(0)}"
    tail = "".join(rng.choice("abc_ %0") for _ in range(rng.choice((0, 3, 8, 12, 16, 20))))
    lines = _lines(text)
    i = rng.randrange(len(lines) + 1)
    lines.insert(i, '"' + tail)
    return "\n".join(lines), f"unterminated string of {len(tail)} chars at line {i + 1}"


def string_value(rng: random.Random, text: str, vocab: Vocabulary) -> tuple[str, str] | None:
    """A string literal's content changed (an algorithm, a label, an iterator type)."""
    m = _pick_match(rng, r"\"([^\"\n]*)\"", text)
    if not m:
        return None
    new = rng.choice(
        ("", "tree", "fold", "ring", "oneshot", "twoshot", "parallel", "reduction", "x" * 40)
    )
    return _replace_span(text, m.start(1), m.end(1), new), f"string {m.group(1)!r} -> {new!r}"


def symbol(rng: random.Random, text: str, vocab: Vocabulary) -> tuple[str, str] | None:
    """A ``@symbol`` renamed (the entry function, a callee)."""
    m = _pick_match(rng, r"@[\w.$-]+", text)
    if not m:
        return None
    new = rng.choice(("@main", "@decode", "@decode2", "@f", "@", "@1"))
    return _replace_span(text, m.start(), m.end(), new), f"symbol {m.group(0)} -> {new}"


# name -> (mutator, relative weight)
MUTATORS: dict[str, tuple[Mutator, float]] = {
    "delete-lines": (delete_lines, 3.0),
    "duplicate-lines": (duplicate_lines, 2.0),
    "swap-lines": (swap_lines, 2.0),
    "move-line": (move_line, 1.0),
    "splice-line": (splice_line, 1.0),
    "chip-index": (chip_index, 3.0),
    "chip-list": (chip_list, 1.0),
    "chip-count": (chip_count, 1.5),
    "shape": (shape, 2.5),
    "slice": (slice_attr, 1.5),
    "integer": (integer, 2.0),
    "swap-ssa": (swap_ssa, 2.0),
    "rename-use": (rename_use, 2.0),
    "truncate": (truncate, 1.0),
    "garbage": (garbage, 2.0),
    "delete-token": (delete_token, 2.0),
    "duplicate-token": (duplicate_token, 1.0),
    "rename-op": (rename_op, 2.0),
    "unterminated-string": (unterminated_string, 0.5),
    "string-value": (string_value, 1.0),
    "symbol": (symbol, 0.7),
}


def mutate_text(
    rng: random.Random, text: str, vocab: Vocabulary, count: int | None = None
) -> tuple[str, list[str]]:
    """Guarantees a text differing from ``text`` by ``count`` mutations (default: 1, 2 or 3,
    mostly 1), each drawn by weight from `MUTATORS`, and their descriptions ("kind: what");
    deterministic in ``rng``'s state."""
    names = list(MUTATORS)
    weights = [MUTATORS[n][1] for n in names]
    if count is None:
        count = rng.choices((1, 2, 3), (0.7, 0.2, 0.1))[0]
    done: list[str] = []
    tries = 0
    while len(done) < count and tries < 50:
        tries += 1
        name = rng.choices(names, weights)[0]
        result = MUTATORS[name][0](rng, text, vocab)
        if result is None or result[0] == text:
            continue
        text, what = result
        done.append(f"{name}: {what}")
    return text, done
