"""Catalog regexes run on RE2 (issue 24): a pattern RE2 cannot run, or one that nests
quantifiers, is a load error at file:line:col with exit 2; the shipped catalog stays linear on
hostile lines (a CPU-time probe, not a wall-clock budget); no answer depends on how busy the
machine is."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from harness.regexcheck import compile_rx, problem
from harness.signatures import MAX_LINE, classify, read_catalog
from tests.conftest import ROOT, harness_cli

LOG = ROOT / "tests/fixtures/diagnose/cudart-missing.txt"


def checkout_copy(tmp: Path) -> Path:
    """matrix.yaml with its scenarios and locks in `tmp`: a catalog there can be spoiled."""
    shutil.copy(ROOT / "matrix.yaml", tmp / "matrix.yaml")
    shutil.copytree(ROOT / "scenarios", tmp / "scenarios")
    shutil.copytree(ROOT / "images" / "locks", tmp / "images" / "locks")
    return tmp / "matrix.yaml"


def spoil(catalog: Path, old: str, new: str) -> tuple[int, int]:
    """Replace the first `old` in the catalog by `new`: (line, column) of the regex's value."""
    text = catalog.read_text(encoding="utf-8")
    at = text.index(old)
    catalog.write_text(text[:at] + new + text[at + len(old) :], encoding="utf-8")
    line = text.count("\n", 0, at) + 1
    return line, at - (text.rfind("\n", 0, at) + 1) + 1


@pytest.mark.parametrize(
    ("regex", "needle", "message"),
    [
        ("(a+)+$", "aaa", "nests a quantifier"),
        (r"(\w+\s?)*$", "abc", "nests a quantifier"),
        ("(a|aa)*b", "aab", "repeats an alternation"),
        (r"(x)\1", "xx", "RE2 can run (invalid escape sequence: \\1)"),
        (r"(?<=cuda|cudnn )error", "error", "RE2 can run (invalid perl operator: (?<=)"),
        (r"(?<=a+)b", "b", "RE2 can run (invalid perl operator: (?<=)"),
        (r"error(?!s)", "error", "RE2 can run (invalid perl operator: (?!)"),
        ("cannot open shared object", "zzzz", "does not contain its needle"),
        # the pre-filter lower-cases a log's bytes, ASCII letters only: "Убито" never holds
        # "убито" there
        ("^Убито$", "убито", "does not contain its needle"),
        # a branch without the needle: a line holding only it is never searched (the catalog
        # shipped nine such patterns, each branch dead where the line lacked the needle)
        ("CUDA_ERROR_ILLEGAL_ADDRESS|cudaErrorIllegalAddress", "illegal_address",
         "a branch without its needle 'illegal_address' (it matches 'cudaerrorillegaladdress')"),
        ("(exit|error) code:? 3221225477", "code ", "(it matches 'exit code: 3221225477')"),
        ("ELF load command (address/offset|alignment) not (properly aligned|page-aligned)",
         "not properly aligned", "a branch without its needle"),
    ],
)  # fmt: skip
def test_unsafe_patterns_are_refused(regex: str, needle: str, message: str) -> None:
    why = problem(regex, needle)
    assert why is not None and message in why, why


def test_a_needle_is_what_the_pre_filter_sees_of_a_match() -> None:
    """ASCII letters in any case, other letters as written; a needle without the capital is
    taken, and it fires on the line (tests/unit/test_signatures.py has the line)."""
    assert problem("^Убито$", "бито") is None
    assert problem("(?i:Segmentation fault)", "segmentation fault") is None
    assert problem("Getötet", "getötet") is None
    # every branch holds the needle, or a branch's text cannot be told (a class, a gap)
    assert problem("(Unable to|Failed to) increase shared memory", "shared memory") is None
    assert problem(r"error( code \d+)?: out of memory", "out of memory") is None


def test_polynomial_patterns_are_linear_on_re2() -> None:
    """`\\s*\\s*\\s*\\s*x` took seconds per line on Python's re (the old wall-clock check refused
    it); on RE2 a 1 MB line of spaces is one pass."""
    assert problem(r"\s*\s*\s*\s*x", "x") is None
    rx = compile_rx(r"\s*\s*\s*\s*x")
    start = time.process_time()
    assert rx.search(" " * 1_000_000) is None
    assert time.process_time() - start < 1.0  # linear: milliseconds; Python's re: hours


@pytest.mark.parametrize(
    ("new", "message"),
    [
        (
            '"(?<=CUDA|cuDNN )error',
            "pattern is not a regular expression RE2 can run (invalid perl operator: (?<=)",
        ),
        ('"(a+)+$', "pattern nests a quantifier inside a quantifier"),
        ('"(x)\\\\1', "pattern is not a regular expression RE2 can run"),
    ],
)
def test_a_bad_catalog_regex_is_a_load_error(tmp_path: Path, new: str, message: str) -> None:
    matrix = checkout_copy(tmp_path)
    catalog = tmp_path / "scenarios" / "signatures.yaml"
    line, col = spoil(catalog, '"Unable to register', new)
    res = harness_cli("diagnose", str(LOG), "--matrix", str(matrix), timeout=120)
    assert res.returncode == 2, res.stderr
    first = res.stderr.splitlines()[0]
    assert first.startswith(f"{catalog}:{line}:{col}: error: {message}"), res.stderr
    assert "Traceback" not in res.stderr and "re2.cc" not in res.stderr, res.stderr
    assert res.stdout == ""


def test_the_shipped_catalog_is_linear_on_hostile_lines() -> None:
    """Each pattern against lines of its own characters, up to the classifier's longest line:
    CPU time (not the wall clock, which a busy machine stretches), with a generous margin."""
    catalog = read_catalog(ROOT / "scenarios/signatures.yaml")
    patterns = [p for s in catalog.signatures for p in s.patterns] + list(catalog.noise)
    patterns += [p for p, _ in catalog.coded]
    start = time.process_time()
    for p in patterns:
        rx = compile_rx(p.regex)
        for seed in (p.needle, p.regex, "a", " ", "0"):
            line = (seed * MAX_LINE)[:MAX_LINE]
            rx.search(line)
            rx.search(line[:-1] + "\x00")
    spent = time.process_time() - start
    assert spent < 10 * max(1, len(patterns) // 300), f"{spent:.1f} s of CPU"


def test_the_shipped_catalog_classifies_as_before() -> None:
    catalog = read_catalog(ROOT / "scenarios/signatures.yaml")
    assert classify("RuntimeError: CUDA error: out of memory\n", catalog).signature == "gpu_oom"
    # a code wrapper: the number ends where a digit does not follow (RE2 has no look-ahead)
    assert classify("cuda runtime error (2) : out of memory\n", catalog).signature == "gpu_oom"
    assert classify("cuda runtime error (20) : x\n", catalog).signature != "gpu_oom"
