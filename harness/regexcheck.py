"""Catalog regexes that are safe to run on every log line: compiled by RE2, checked once, at load.

The classifier runs every catalog regex on RE2 (google-re2), which matches in time linear in the
line whatever the pattern: no backtracking, so no log can stall a run, and no check depends on
how fast this machine is. A pattern RE2 cannot compile (a backreference, any look-around) is
refused with RE2's reason.

A pattern is also refused when it nests a quantifier inside another, like `(a+)+`, or repeats an
alternation without bound, like `(a|aa)*`. RE2 runs those in linear time too; they stay refused
because the catalog is written in the syntax RE2 and Python's `re` share, and people and tools
run its patterns on backtracking engines (Python's `re`, `grep -P`, a regex tester),
where such a pattern takes exponential time on a line of `a`s. Such a pattern always has a
plain equivalent (`(a+)+$` is `a+$`). Every needle (the literal the Aho-Corasick pre-filter looks
for) must be written in its regex: a needle that no match can contain would keep the pattern from
ever firing.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any, Protocol

import re2

_sre: Any = importlib.import_module("re._parser")  # sre_parse (deprecated name) in 3.11+
_C: Any = importlib.import_module("re._constants")
REPEATS = {_C.MAX_REPEAT, _C.MIN_REPEAT, getattr(_C, "POSSESSIVE_REPEAT", _C.MAX_REPEAT)}
MANY = _C.MAXREPEAT


class Match(Protocol):
    def start(self) -> int: ...
    def end(self) -> int: ...


class Compiled(Protocol):
    """A compiled catalog regex (RE2): `search` takes linear time in the text."""

    def search(self, text: str) -> Match | None: ...


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # RE2 would print its own error to stderr (absl) as well
    return options


_OPTIONS = _options()


class RegexError(ValueError):
    """RE2 cannot compile a pattern."""


@functools.lru_cache(maxsize=4096)
def compile_rx(regex: str) -> Compiled:
    """`regex` compiled by RE2, the engine every catalog pattern runs on. Remembered: the
    catalog's check compiles each pattern when the catalog is read, and the scan uses the
    same compiled pattern again (a compiled RE2 pattern is never changed by a search)."""
    try:
        compiled: Compiled = re2.compile(regex, _OPTIONS)
    except re2.error as exc:
        why = exc.args[0] if exc.args else exc
        text = why.decode("utf-8", "replace") if isinstance(why, bytes) else str(why)
        raise RegexError(text) from None
    return compiled


def problem(regex: str, needle: str) -> str | None:
    """Why `regex` (with its `needle`) cannot go into the catalog (a phrase after 'pattern'),
    or None."""
    try:
        tree = _sre.parse(regex)
    except Exception as exc:  # re.error, or a parser corner case: either way not ours
        return f"is not a valid regular expression: {exc}"
    try:
        compile_rx(regex)
    except RegexError as exc:
        return (
            f"is not a regular expression RE2 can run ({exc}): RE2 has no backreferences and no "
            "look-around ((?=, (?!, (?<=, (?<!)"
        )
    found = _nesting(list(tree), 0)
    if found:
        return found
    texts = _texts(list(tree))
    if texts is None:
        return None
    lacking = [t for t in texts if needle not in t]
    if len(lacking) == len(texts):
        return f"does not contain its needle {needle!r}, so the pre-filter never lets it fire"
    if lacking:  # a line holding only that branch's text lacks the needle: never searched
        branch = lacking[0].replace(_GAP, "...")
        return (
            f"has a branch without its needle {needle!r} (it matches {branch!r}), so the "
            "pre-filter never lets that branch fire; give that branch a pattern and a needle of "
            "its own, or a needle every branch holds"
        )
    return None


def always_holds(regex: str, needle: str) -> bool:
    """Whether every match of `regex` (lower-cased) holds `needle`: then a line without the
    needle need not be searched. False where that cannot be told."""
    try:
        texts = _texts(list(_sre.parse(regex)))
    except Exception:  # not ours to judge here: problem() reports it
        return False
    return texts is not None and all(needle in t for t in texts)


def digit_blind(regex: str) -> bool:
    """Whether `regex` treats every ASCII digit alike: no digit in it (a literal, a class member,
    a range end), no backreference. Then it matches a line exactly where it matches the line with
    each digit replaced by 0, at the same places. False where that cannot be told."""
    try:
        tree = _sre.parse(regex)
    except Exception:  # not ours to judge here: problem() reports it
        return False
    return _blind(list(tree))


_DIGITS = range(48, 58)  # "0" to "9"
_LEAVES = {_C.ANY, _C.AT, _C.CATEGORY}


def _blind(seq: list[Any]) -> bool:
    for op, av in seq:
        if op in (_C.LITERAL, _C.NOT_LITERAL):
            if av in _DIGITS:
                return False
        elif op is _C.IN:
            for o, a in av:
                if o is _C.LITERAL and a in _DIGITS:
                    return False
                some = len(range(max(a[0], 48), min(a[1], 57) + 1)) if o is _C.RANGE else 0
                if 0 < some < 10:
                    return False  # a range of some digits only
                if o not in (_C.LITERAL, _C.RANGE, _C.CATEGORY, _C.NEGATE):
                    return False
        elif op in (_C.GROUPREF, _C.GROUPREF_EXISTS):
            return False
        elif op in _LEAVES:
            continue
        else:
            children = _children(op, av)
            if not children:
                return False  # a node not known here
            if not all(_blind(c) for c in children):
                return False
    return True


def _children(op: Any, av: Any) -> list[list[Any]]:
    if op in REPEATS:
        return [list(av[2])]
    if op is _C.SUBPATTERN:
        return [list(av[-1])]
    if op is _C.BRANCH:
        return [list(s) for s in av[1]]
    if op in (_C.ASSERT, _C.ASSERT_NOT):
        return [list(av[1])]
    if op is _C.GROUPREF_EXISTS:
        return [list(s) for s in av[1:] if s is not None]
    if op is getattr(_C, "ATOMIC_GROUP", None):
        return [list(av)]
    return []


def _nesting(seq: list[Any], outer: int) -> str | None:
    """`outer`: the largest max count of the repeats around seq (0: none)."""
    for op, av in seq:
        if op in (_C.GROUPREF, _C.GROUPREF_EXISTS):
            return "uses a backreference (matching it can take exponential time)"
        if op in REPEATS:
            hi = av[1]
            if outer > 1 and hi > 1 and MANY in (outer, hi):
                return (
                    "nests a quantifier inside a quantifier, like (a+)+ (exponential backtracking)"
                )
        if op is _C.BRANCH and outer == MANY:
            return "repeats an alternation without bound, like (a|a)* (exponential backtracking)"
        inner = max(outer, av[1]) if op in REPEATS else outer
        for child in _children(op, av):
            found = _nesting(child, inner)
            if found:
                return found
    return None


def _fold(c: int) -> str:
    """A character as the pre-filter sees it: the classifier lower-cases a log's bytes, which
    folds ASCII letters only (a needle's "ж" is not found in a line's "Ж")."""
    ch = chr(c)
    return ch.lower() if ch.isascii() else ch


def _char(op: Any, av: Any) -> str | None:
    """The lower-case character a node matches when it is one letter in any case."""
    if op is _C.LITERAL:
        return _fold(av)
    if op is _C.IN and av and all(o is _C.LITERAL for o, _ in av):
        chars = {_fold(c) for _, c in av}
        return chars.pop() if len(chars) == 1 else None
    return None


MAX_PATHS = 256  # alternatives expanded; past it the needle check gives the benefit of the doubt
_GAP = "\x00"  # stands for whatever a non-literal part matches


def _texts(seq: list[Any]) -> list[str] | None:
    """The literal text (lower case) along each path through seq, a gap where anything else
    matches; None past MAX_PATHS paths."""
    out = [""]
    for op, av in seq:
        c = _char(op, av)
        if c is not None:
            out = [t + c for t in out]
            continue
        if op is _C.SUBPATTERN or op is _C.BRANCH or (op in REPEATS and av[1] == 1):
            parts: list[str] = [""] if op in REPEATS and av[0] == 0 else []
            for child in _children(op, av):
                sub = _texts(child)
                if sub is None:
                    return None
                parts += sub
        elif op is _C.IN and av and all(o is _C.LITERAL for o, _ in av):
            parts = sorted({_fold(c) for _, c in av})  # [ab]: a or b
        elif op in REPEATS:
            sub = _texts(_children(op, av)[0])
            if sub is None:
                return None
            parts = [_GAP] + [_GAP + t + _GAP for t in sub]
        else:
            parts = [_GAP]
        out = [t + p for t in out for p in parts]
        if len(out) > MAX_PATHS:
            return None
    return out
