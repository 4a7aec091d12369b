"""Work the report does on a whole column at once (100,000 rows: one pass in C instead of one
call per value) gives what the per-value function gives, for any text: release_ranks as
version_keys orders, md_each as md, clean_each as clean, export's _attrs as _attr."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.model import major_minor, stack_slug, version_key, version_keys
from harness.report.export import _attr, _attrs
from harness.report.frame import _stack_order, release_ranks
from harness.report.md import md, md_each
from harness.report.safe import clean, clean_each

# Characters each function treats apart: escapes, control characters, ANSI sequences' parts,
# NUL (clean_each's separator), lone surrogates, digits and dots, and some others.
TRICKY = "&<>|`\"'\n\r\t\x00\x1b[31m;?~ \x7f\x9f\ud800é1.0"
TEXTS = st.lists(st.text(alphabet=st.sampled_from(TRICKY) | st.characters(), max_size=12))
NUMBER = st.sampled_from(["0", "00", "1", "2", "9", "10", "07", "100", "123456789012345678"])
RELEASE = st.lists(NUMBER, min_size=1, max_size=5).map(".".join)


def ranks(texts: list[str]) -> list[int]:
    """Each text's place among the distinct keys version_keys gives, the slow way."""
    keys = version_keys(texts)
    order = {k: i for i, k in enumerate(sorted(set(keys)))}
    return [order[k] for k in keys]


@settings(max_examples=400, deadline=None)
@given(st.lists(RELEASE, min_size=1, max_size=40, unique=True))
def test_release_ranks_order_as_version_keys_do(texts: list[str]) -> None:
    got = release_ranks(texts)
    assert got is not None and got.tolist() == ranks(texts)


@given(st.lists(RELEASE, max_size=5), st.sampled_from(["", "1.", ".1", "1..2", "a", "1" * 19,
       "\uff11", "1.2rc1", "1 ", "-1"]))  # fmt: skip
def test_release_ranks_leave_what_is_not_a_bare_release_to_version_keys(
    texts: list[str], odd: str
) -> None:
    assert release_ranks([*texts, odd]) is None


def test_release_ranks_equal_where_versions_are_equal() -> None:
    got = release_ranks(["1.0", "1", "0", "0.0.0", "1.0.1", "2", "10", "9.99"])
    assert got is not None and got.tolist() == [1, 1, 0, 0, 2, 3, 5, 4]


PART = st.sampled_from(["1", "1.0", "1.0.0", "2", "10", "a", "2.1rc1"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(*[PART] * 6), min_size=0, max_size=30))
def test_stacks_order_as_their_keys_say_slug_last(stacks: list[tuple[str, ...]]) -> None:
    """_stack_order (numpy ranks, the slug ranked only where all else ties) orders stacks by
    framework, version, CUDA, cuDNN major.minor, Python, base, then slug. Parts drawn from a few
    values: ties on all but the slug are common ("1" and "1.0" are one version)."""
    by_slug = {stack_slug(p): p for p in stacks}

    def key(slug: str) -> tuple[object, ...]:
        fw, version, cuda, cudnn, python, base = by_slug[slug]
        versions = (version_key(v) for v in (version, cuda, major_minor(cudnn), python))
        return (fw, *versions, base, slug)

    assert _stack_order(by_slug) == sorted(by_slug, key=key)
    assert _stack_order(dict(reversed(by_slug.items()))) == sorted(by_slug, key=key)


@settings(max_examples=300, deadline=None)
@given(TEXTS)
def test_a_column_escaped_at_once_is_each_value_escaped(texts: list[str]) -> None:
    assert md_each(texts) == [md(t) for t in texts]
    assert clean_each(texts) == [clean(t) for t in texts]
    assert _attrs(texts) == [_attr(t) for t in texts]


@pytest.mark.parametrize("char", list('&<>|`"\n\r\t\x00\x1b\x7f\ud800'))
def test_each_character_a_column_function_treats_apart_is_treated_alone(char: str) -> None:
    texts = ["plain", f"a{char}[0mb", "plain"]
    assert md_each(texts) == [md(t) for t in texts]
    assert clean_each(texts) == [clean(t) for t in texts]
    assert _attrs(texts) == [_attr(t) for t in texts]
