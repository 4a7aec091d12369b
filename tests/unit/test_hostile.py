"""Hostile input into every reader (bench/hostile_bench.py measures the same categories end to
end): each reader succeeds or raises a ConfigError (exit 2), never another exception, within a
time bound; the journal reader skips a bad line and says where."""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import ids, inputs, journal, loader
from harness.errors import ConfigError, HarnessError
from harness.fs import append_summary, atomic_write, writable_dir
from harness.loader import parse_yaml, read_yaml
from harness.lock import LockError, read_lock
from harness.matrix import parse_matrix
from harness.regexcheck import problem
from harness.report.read import read_plans
from harness.scenarios import parse_scenario
from harness.signatures import parse_catalog
from tests.conftest import ROOT

GOOD = (ROOT / "reports/results/journal.jsonl").read_text(encoding="utf-8").splitlines()[0]
SETTINGS = settings(
    max_examples=60, deadline=2000, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
    for p, c in zip("abcdefgh", "bcdefghi", strict=True)
)


def yaml_readers(text: str) -> None:
    for parse in (parse_matrix, parse_catalog):
        with contextlib.suppress(ConfigError):
            parse(parse_yaml(text, "f.yaml"))
    with contextlib.suppress(ConfigError):
        parse_scenario(parse_yaml(text, "f.yaml"), expected_id="f", known=frozenset({"unknown"}))


yaml_text = st.recursive(
    st.one_of(st.text(max_size=20), st.integers().map(str), st.just("&a x"), st.just("*a")),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4).map(lambda xs: "[" + ", ".join(xs) + "]"),
        st.dictionaries(st.text(max_size=8), inner, max_size=4).map(
            lambda d: "{" + ", ".join(f"{json.dumps(k)}: {v}" for k, v in d.items()) + "}"
        ),
    ),
    max_leaves=30,
)


@SETTINGS
@given(
    st.one_of(
        yaml_text, st.text(max_size=300), st.binary(max_size=300).map(lambda b: b.decode("latin-1"))
    )
)
def test_yaml_readers_succeed_or_refuse(text: str) -> None:
    yaml_readers(text)


@SETTINGS
@given(st.binary(max_size=2000))
def test_every_file_reader_takes_random_bytes(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "plan.json"
    path.write_bytes(data)
    readers = (lambda: read_yaml(path), lambda: read_lock(path), lambda: read_plans([tmp_path]))
    for read in readers:
        try:
            read()
        except HarnessError as exc:
            assert exc.exit_code == 2


@SETTINGS
@given(st.lists(st.one_of(st.binary(max_size=200), st.just(GOOD.encode())), max_size=8))
def test_the_journal_reader_never_dies_on_a_line(tmp_path: Path, lines: list[bytes]) -> None:
    (tmp_path / "journal.jsonl").write_bytes(b"\n".join(lines))
    got = journal.read(tmp_path)
    whole = sum(1 for ln in lines if ln == GOOD.encode())
    assert len(got.records) == whole, "every good line is read, whatever is around it"
    journal.results(tmp_path)


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("[" * 100_000, "nested more than"),
        ("[1, 2]", "not a JSON object"),
        (GOOD.replace('"expected": {', '"expected": [1], "x": {', 1), "expected is list"),
        (GOOD.replace('"exit_code": 0', '"exit_code": ' + "9" * 30, 1), "out of range"),
        (GOOD.replace('"drift": false', '"drift": "false"', 1), "drift is str"),
        (re.sub(r'"seconds": [0-9.]+', '"seconds": NaN', GOOD, count=1), "not JSON"),
        (re.sub(r'"seconds": [0-9.]+', '"seconds": true', GOOD, count=1), "seconds is bool"),
        (GOOD.replace('"exit_code": 0', '"exit_code": 0.5', 1), "exit_code is float"),
        ("\ufeff" + GOOD, "not JSON (Unexpected UTF-8 BOM"),  # only the first line may have one
        (GOOD.replace("{", '{"x": ' + "[" * 64 + "]" * 64 + ", ", 1), "nested more than 64"),
        # an array or object as the schema: `in` a set raised TypeError (a traceback from run
        # --dry-run and report); true is no schema number either
        (re.sub(r'"schema": \d+', '"schema": []', GOOD, count=1), "unknown schema '[]'"),
        (re.sub(r'"schema": \d+', '"schema": {"a": 1}', GOOD, count=1), "unknown schema"),
        (re.sub(r'"schema": \d+', '"schema": true', GOOD, count=1), "unknown schema 'True'"),
    ],
)
def test_a_bad_line_is_skipped_counted_and_placed(tmp_path: Path, line: str, why: str) -> None:
    (tmp_path / "journal.jsonl").write_text(f"{GOOD}\n{line}\n{GOOD}\n", encoding="utf-8")
    got = journal.read(tmp_path)
    assert len(got.records) == 2
    [skipped] = got.skipped
    assert skipped.line == 2 and why in skipped.why, skipped
    assert str(skipped).startswith(f"{tmp_path / 'journal.jsonl'}:2: warning:")


def test_a_record_64_deep_is_read(tmp_path: Path) -> None:
    line = GOOD.replace("{", '{"x": ' + "[" * 63 + "]" * 63 + ", ", 1)
    (tmp_path / "journal.jsonl").write_text(line + "\n", encoding="utf-8")
    assert len(journal.read(tmp_path).records) == 1


def _deepest(value: object) -> int:
    if isinstance(value, dict):
        value = list(value.values())
    return 1 + max(map(_deepest, value), default=0) if isinstance(value, list) else 0


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner),
    max_leaves=40,
)


@SETTINGS
@given(json_values, st.integers(min_value=0, max_value=6))
def test_depth_is_the_deepest_nesting(value: object, limit: int) -> None:
    assert inputs.depth(value, limit) == (_deepest(value) <= limit)


def test_bom_and_line_separator_keep_the_record(tmp_path: Path) -> None:
    rec = GOOD.replace('"error": null', '"error": "a\u2028b"', 1)
    (tmp_path / "journal.jsonl").write_bytes(b"\xef\xbb\xbf" + rec.encode() + b"\n")
    got = journal.read(tmp_path)
    assert got.skipped == [] and got.records[0]["error"] == "a\u2028b"


def test_special_files_named_jsonl_are_skipped(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").mkdir()
    os.mkfifo(tmp_path / "b.jsonl")
    (tmp_path / "journal.jsonl").write_text(GOOD + "\n", encoding="utf-8")
    got = journal.read(tmp_path)
    assert len(got.records) == 1
    assert [s.why.split(",")[0] for s in got.skipped] == [
        f"{tmp_path / 'a.jsonl'} is a folder",
        f"{tmp_path / 'b.jsonl'} is a FIFO",
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (BOMB, "expands to more than"),
        (
            "schema: 1\nzz: "
            + BOMB.replace("\n", " ").split(":", 1)[1][:0]
            + "x\n"
            + BOMB.replace("a:", "q:", 1),
            "expands to more than",
        ),
        ("a: " + "[" * 500 + "]" * 500, "nested more than 64 deep"),
    ],
)
def test_yaml_budgets(text: str, message: str) -> None:
    start = time.monotonic()
    with pytest.raises(ConfigError, match=message):
        parse_yaml(text, "m.yaml")
    assert time.monotonic() - start < 5


@pytest.mark.parametrize(
    ("data", "where", "message"),
    [
        (b"schema: 1\x07\n", ":1:10", r"control character U\+0007"),
        (b"a: 1\nb: \xff\n", ":2:4", "not UTF-8"),
        (b"a: [" + b"1," * 600_000 + b"1]\n", "", "larger than 1024 KiB"),
    ],
)
def test_text_files(tmp_path: Path, data: bytes, where: str, message: str) -> None:
    (tmp_path / "m.yaml").write_bytes(data)
    with pytest.raises(ConfigError, match=message) as info:
        read_yaml(tmp_path / "m.yaml", display="m.yaml")
    assert info.value.where is not None and str(info.value.where).endswith(where or ":1:1")


@pytest.mark.parametrize("special", ["fifo", "/dev/zero", "/dev/urandom", "dir"])
def test_only_regular_files_are_read(tmp_path: Path, special: str) -> None:
    path = Path(special)
    if special == "fifo":
        os.mkfifo(path := tmp_path / "f")
    elif special == "dir":
        path = tmp_path
    with pytest.raises(ConfigError, match="not a regular file"):
        inputs.read_regular(path, limit=10, help="h")


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("535.104.05", True),
        ("535.104.05\n", False),
        ("\u0665\u0663\u0665.\u0661\u0660\u0664.\u0660\u0665", False),  # Arabic-Indic
        ("535", True),  # a bare branch: the oldest driver of branch 535
        ("5350", False),
        ("1.2.3.4.5", False),
    ],
)
def test_driver_rule(text: str, ok: bool) -> None:
    assert ids.is_driver(text) is ok


@pytest.mark.parametrize(
    ("regex", "needle", "message"),
    [
        ("(a+)+$", "aaa", "nests a quantifier"),
        (r"(\w+\s?)*$", "abc", "nests a quantifier"),
        ("(a|aa)*b", "aab", "repeats an alternation"),
        (r"(x)\1", "xx", "RE2 can run"),
        ("cannot open shared object", "zzzz", "does not contain its needle"),
    ],
)
def test_unsafe_patterns_are_refused(regex: str, needle: str, message: str) -> None:
    start = time.monotonic()
    why = problem(regex, needle)
    assert why is not None and message in why
    assert time.monotonic() - start < 3


def test_the_shipped_catalog_passes() -> None:
    from harness.signatures import read_catalog

    assert read_catalog(ROOT / "scenarios/signatures.yaml").signatures
    # a class of one letter in two cases folds to it; the needle must hold on every branch
    assert problem("Cu[Dd][Nn][Nn] library (a|b) x", "cudnn library ") is None
    assert "a branch without its needle" in str(
        problem("Cu[Dd][Nn][Nn] library (a|b) x", "cudnn library a")
    )


def test_lock_with_injected_lines_is_refused(tmp_path: Path) -> None:
    lock = json.loads((ROOT / "images/locks").glob("*.json").__next__().read_text())
    slug = lock["slug"]
    lock["wheels"][0]["name"] += "\n--extra-index-url https://evil.example/"
    (tmp_path / f"{slug}.json").write_text(json.dumps(lock))
    with pytest.raises(LockError, match="not a project name"):
        read_lock(tmp_path / f"{slug}.json")
    (tmp_path / "other.json").write_text(json.dumps(lock))
    with pytest.raises(LockError, match="not of 'other'"):
        read_lock(tmp_path / "other.json")


def test_output_paths(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    for bad in (tmp_path / "file", Path("/dev/null"), Path("/proc/self")):
        with pytest.raises(ConfigError):
            writable_dir(bad, "--out")
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(ConfigError, match="FIFO: it is not replaced"):
        atomic_write(tmp_path / "fifo", "x")
    for bad in (tmp_path, Path("/dev/full")):  # a folder; a device that refuses writes
        with pytest.raises(ConfigError):
            append_summary(bad, "x")
    append_summary(Path("/dev/null"), "x")  # written to, never read, never replaced
    assert Path("/dev/null").is_char_device()
    summary = tmp_path / "summary"
    summary.write_bytes(b"\xff\xfe binary, no newline")
    append_summary(summary, "## report\n")
    assert summary.read_bytes() == b"\xff\xfe binary, no newline\n## report\n"


def _both_parsers(text: str) -> tuple[object, object]:
    """What libyaml's parser (the fast path) and PyYAML's pure-Python one make of `text`: a Doc,
    or the error message."""
    out: list[object] = []
    for fast in (loader._FAST, None):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(loader, "_FAST", fast)
            try:
                out.append(parse_yaml(text, "m.yaml"))
            except ConfigError as exc:
                out.append(f"{exc.where}: {exc}")
    return out[0], out[1]


def test_every_shipped_yaml_file_reads_alike_on_libyaml() -> None:
    assert loader._FAST is not None, "PyYAML without libyaml: every command parses 10x slower"
    files = [p for p in ROOT.rglob("*.y*ml") if ".git" not in p.parts and ".nox" not in p.parts]
    assert len(files) > 40
    taken = 0
    for path in files:
        text = path.read_text(encoding="utf-8")
        fast, slow = _both_parsers(text)
        assert fast == slow, path
        if isinstance(fast, loader.Doc):
            taken += loader._fast(text, "m.yaml") is not None
    assert taken > 40  # libyaml read them: not every file fell back to PyYAML's parser


@pytest.mark.parametrize(
    "text",
    [
        "a: " + "[" * 62 + "1" + "]" * 62,  # 63 collections and the scalar: 64 levels
        "a: " + "[" * 63 + "1" + "]" * 63,  # 65 levels: refused by both
        "a: " + "[" * 63 + "]" * 63,
        "a: [1,\t2]\n",  # libyaml takes a tab here, PyYAML does not: PyYAML decides
        "a: &x [1]\nb: *x\nc: {d: *x}\n",
        "a: 1\na: 2\n",
        "<<: {a: 1}\n",
        "",
        "--- 1\n--- 2\n",
        "a: 'unclosed\n",
    ],
)
def test_libyaml_and_pyyaml_agree_at_the_edges(text: str) -> None:
    fast, slow = _both_parsers(text)
    assert fast == slow
