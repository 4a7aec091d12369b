"""harness.inputs.loads_utf8: orjson where it gives what the standard library gives, the
standard library's way everywhere else. For every input, the same value (of the same types) or
the same error as `loads(raw.decode("utf-8"))`, with orjson and without it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import inputs

TRICKY = [
    b'{"a": 1}',
    b'{"a":1,"a":[2]}',  # a repeated key: the last wins
    b'"\\ud800"',  # a lone surrogate
    b'"\\udc00\\ud800"',
    b'"\\ud83d\\ude00"',  # a pair
    b'"\xed\xa0\x80"',  # a surrogate written as UTF-8: not UTF-8
    b'"\xff"',
    b"NaN",
    b"[Infinity]",
    b"[1e400]",  # json: inf; orjson refuses
    b"18446744073709551615",
    b"18446744073709551616",  # past 64 bits: orjson would give a float
    b"-9223372036854775809",
    b"12345678901234567890123",
    b'{"exit_code": 99999999999999999999}',
    b"1e-400",
    b"-0",
    b"-0.0",
    b"01",
    b"[1,]",
    b'"a\x01b"',
    b'"\x7f\xc2\x80"',
    b"\xef\xbb\xbf{}",  # a BOM
    b"[" * 65 + b"]" * 65,  # past JSON_DEPTH
    b"[" * 64 + b"]" * 64,
    b"[" * 2000 + b"]" * 2000,  # past orjson's own limit
    b'{"a": {"b": [' + b"{}," * 100 + b"{}]}}",  # many brackets, shallow
    b"",
    b"   ",
    b'{"a": 1} x',
]


def outcome(fn: Any, raw: bytes) -> tuple[str, Any]:
    try:
        value = fn(raw)
    except ValueError as exc:  # UnicodeDecodeError included
        return type(exc).__name__, str(exc)
    return "value", json.dumps(value, sort_keys=True, default=repr) + typed(value)


def typed(value: Any) -> str:
    """The types too: 1.0 == 1, and json.dumps alone would not tell 2**64 from 1.8e19."""
    if isinstance(value, dict):
        return "{" + ",".join(k + typed(v) for k, v in sorted(value.items())) + "}"
    if isinstance(value, list):
        return "[" + ",".join(typed(v) for v in value) + "]"
    return type(value).__name__


def slow(raw: bytes, surrogates: str) -> Any:
    return inputs.loads(raw.decode("utf-8"), surrogates=surrogates)


def test_orjson_is_there() -> None:
    """The report extra installs it; without it every case below tests json against json."""
    assert inputs.orjson is not None


@pytest.mark.parametrize("raw", TRICKY)
@pytest.mark.parametrize("surrogates", ["refuse", "replace"])
def test_the_same_value_or_error_as_json(raw: bytes, surrogates: str) -> None:
    want = outcome(lambda r: slow(r, surrogates), raw)
    assert outcome(lambda r: inputs.loads_utf8(r, surrogates=surrogates), raw) == want


@pytest.mark.parametrize("raw", TRICKY[:8])
def test_without_orjson_too(raw: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    want = outcome(lambda r: slow(r, "replace"), raw)
    monkeypatch.setattr(inputs, "orjson", None)
    assert outcome(lambda r: inputs.loads_utf8(r, surrogates="replace"), raw) == want


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(_JSON, st.data())
def test_any_value_and_any_corruption_of_it(value: Any, data: st.DataObject) -> None:
    """json.dumps of anything (NaN and huge integers included), then a byte changed, cut or
    added: what a torn or hostile journal line looks like."""
    raw = json.dumps(value, ensure_ascii=data.draw(st.booleans())).encode("utf-8", "surrogatepass")
    if raw and data.draw(st.booleans()):
        i = data.draw(st.integers(0, len(raw) - 1))
        raw = raw[:i] + data.draw(st.binary(max_size=2)) + raw[i + data.draw(st.integers(0, 2)) :]
    want = outcome(lambda r: slow(r, "replace"), raw)
    assert outcome(lambda r: inputs.loads_utf8(r, surrogates="replace"), raw) == want
