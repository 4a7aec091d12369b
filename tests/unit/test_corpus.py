"""The public log corpus' manifest (bench/corpus/manifest.json) keeps its own rules: every row's
log is there, its label is an id the catalog has (or no_failure), and its half is the one the
split rule gives, decided by the thread alone, so a thread never spans both halves and no half
is chosen after its log was scored."""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict

from harness.signatures import read_catalog
from tests.conftest import ROOT

MANIFEST = ROOT / "bench/corpus/manifest.json"


def rows() -> list[dict[str, str]]:
    return json.loads(MANIFEST.read_text(encoding="utf-8"))["logs"]


def split(source: str) -> str:
    """The manifest's split_rule for a log collected from a thread."""
    return "test" if hashlib.sha256(source.encode()).digest()[0] % 2 else "tune"


def test_every_row_names_a_log_that_is_there_once() -> None:
    seen = set()
    for r in rows():
        assert (ROOT / r["path"]).is_file(), r["path"]
        assert r["case"] not in seen, r["case"]
        seen.add(r["case"])


def test_labels_are_catalog_ids() -> None:
    ids = set(read_catalog(ROOT / "scenarios/signatures.yaml").ids) | {"no_failure"}
    wrong = [(r["case"], r["signature"]) for r in rows() if r["signature"] not in ids]
    assert not wrong


def test_halves_follow_the_split_rule() -> None:
    rule = json.loads(MANIFEST.read_text(encoding="utf-8"))["split_rule"]
    assert "sha256(source URL)[0]" in rule
    off = []
    for r in rows():
        want = "tune" if r["path"].startswith("tests/fixtures/logs/") else split(r["source"])
        if r["half"] != want:
            off.append((r["case"], r["half"], want))
    assert not off, f"{len(off)} rows in the wrong half, e.g. {off[:3]}"


def test_a_thread_is_in_one_half() -> None:
    halves: dict[str, set[str]] = defaultdict(set)
    for r in rows():
        if r["path"].startswith("bench/"):
            halves[r["source"]].add(r["half"])
    assert all(len(h) == 1 for h in halves.values())


def test_the_rule_splits_known_sources() -> None:
    # sha256("https://github.com/invoke-ai/InvokeAI/issues/2164")[0] is 0xa5 (odd): test.
    assert hashlib.sha256(b"https://github.com/invoke-ai/InvokeAI/issues/2164").digest()[0] == 0xA5
    assert split("https://github.com/invoke-ai/InvokeAI/issues/2164") == "test"
