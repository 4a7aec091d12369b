"""The report's machine-readable files: results.csv (every column, one row per cell) and
junit.xml (one testcase per cell: drift and timeouts fail, harness errors error, cells that did
not finish or did not run are skipped). Pure."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence

import pandas as pd  # type: ignore[import-untyped]

from harness.report.frame import PREDICTED

# Characters XML 1.0 cannot hold at all, escaped or not. The frame already drops control
# characters from log lines; this guards every field that reaches junit.xml.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


_CSV = {
    "cell": "cell", "framework": "framework", "stack": "stack", "scenario": "scenario",
    "status": "status", "verdict": "verdict", "drift": "drift", "level": "evidence_level",
    "evidence": "evidence", "exp_outcome": "expected_outcome",
    "exp_signature": "expected_signature", "exp_stage": "expected_stage",
    "obs_outcome": "observed_outcome", "obs_signature": "observed_signature",
    "obs_stage": "observed_stage", "obs_line": "observed_decisive_line",
    "obs_exit": "observed_exit_code", "obs_signal": "observed_signal",
    "obs_fingerprint": "observed_fingerprint",
    "secondary": "verdict_secondary", "backend": "backend", "seconds": "seconds",
    "started": "started", "driver": "driver", "gpu": "gpu", "image": "image",
}  # fmt: skip


def csv_text(frame: pd.DataFrame) -> str:
    return str(frame[list(_CSV)].rename(columns=_CSV).to_csv(index=False, lineterminator="\n"))


def xml_safe(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def _xml_column(column: pd.Series) -> list[str]:
    """Each distinct value cleaned once: most columns repeat a few values 100k times."""
    clean = {v: xml_safe(v) for v in column.unique().tolist()}
    return [clean[v] for v in column.tolist()]


def _junit_child(klass: str, why: Sequence[str]) -> tuple[str, str, str]:
    """(element, message, text) under a <testcase>; expected failures that failed as expected
    are passes, so only drift, timeouts, errors and cells that did not finish get one."""
    expected, verdict, line, error, code = why
    seen = f"expected {expected}, observed {verdict}"
    if klass == "drift":
        return "failure", f"{seen} (exit code {code})" if code else seen, line
    if klass == "timeout":
        return "failure", f"timed out ({seen})", line
    if klass == "errored":
        return "error", "the harness failed to run this cell", error
    if klass == "interrupted":
        return "skipped", "interrupted: not finished", ""
    if klass == PREDICTED:
        return "skipped", f"not run (predicted: {expected})", ""
    return "", "", ""


def _junit_columns(frame: pd.DataFrame) -> list[list[str]]:
    seconds = frame["seconds"].fillna(0).map("{:.3f}".format)
    code = frame["obs_exit"].astype("string").fillna("")
    cols = [frame[c] for c in ("stack", "scenario")] + [seconds]
    cols += [frame[c] for c in ("klass", "expected", "verdict", "obs_line", "error")]
    return [_xml_column(c) for c in (*cols, code)]


def junit_xml(frame: pd.DataFrame) -> str:
    root = ET.Element("testsuites")
    suite = ET.SubElement(root, "testsuite", name="stackmatrix")
    kinds = []
    for stack, scenario, secs, klass, *why in zip(*_junit_columns(frame), strict=True):
        case = ET.SubElement(suite, "testcase", classname=stack, name=scenario, time=secs)
        kind, message, text = _junit_child(klass, why)
        if kind:
            ET.SubElement(case, kind, message=message, type=klass).text = text or None
        kinds.append(kind)
    suite.set("tests", str(len(kinds)))
    for kind, attr in (("failure", "failures"), ("error", "errors"), ("skipped", "skipped")):
        suite.set(attr, str(kinds.count(kind)))
    suite.set("time", f"{frame['seconds'].fillna(0).sum():.3f}")
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
