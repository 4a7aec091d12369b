"""The report's machine-readable files: results.csv (every column, one row per cell, each field
cleaned and neutralised against formula injection) and junit.xml. Pure.

JUnit: one testcase per cell, classname `<framework>.<stack slug, dots as _>` (CI tools split a
classname at its dots into package and class), name = the scenario, properties (driver, gpu,
image, evidence, backend). Drift and timeouts fail, with the decisive line and the reproduce
command; harness errors error; a cell that failed as expected passes, its signature in
system-out; cells that did not finish, did not run, or whose fault could not show here are
skipped.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from operator import itemgetter
from typing import cast

import pandas as pd  # type: ignore[import-untyped]

from harness.report.frame import PREDICTED, UNOBSERVABLE, each_once
from harness.report.safe import FORMULA, csv_field

# Characters XML 1.0 cannot hold at all, escaped or not. The frame already drops control
# characters; this guards every field that reaches junit.xml.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


_CSV = {
    "cell": "cell", "framework": "framework", "stack": "stack", "scenario": "scenario",
    "status": "status", "verdict": "verdict", "drift": "drift", "level": "evidence_level",
    "evidence": "evidence", "exp_outcome": "expected_outcome",
    "exp_signature": "expected_signature", "exp_stage": "expected_stage",
    "because": "expected_because",
    "obs_outcome": "observed_outcome", "obs_signature": "observed_signature",
    "obs_stage": "observed_stage", "obs_line": "observed_decisive_line",
    "obs_exit": "observed_exit_code", "obs_signal": "observed_signal",
    "obs_fingerprint": "observed_fingerprint",
    "secondary": "verdict_secondary", "backend": "backend", "seconds": "seconds",
    "started": "started", "target": "planned_driver", "driver": "driver", "gpu": "gpu",
    "image": "image", "host": "host", "engine": "engine",
}  # fmt: skip
_PROPERTIES = {"target": "driver", "gpu": "gpu", "image": "image", "level": "evidence"}
_PROPERTIES |= {"backend": "backend", "driver": "host_driver"}


def csv_text(frame: pd.DataFrame) -> str:
    """What csv.writer (QUOTE_MINIMAL, "\n" after each row) writes of the columns, each field
    as DataFrame.to_csv wrote it (a float as repr, a missing value as ""), joined in C: each
    column quoted where it needs it, then each row joined (the csv module took a second for
    100,000 rows of 30 fields)."""
    columns = [_csv_column(frame[col]) for col in _CSV]
    head = ",".join(map(_quoted, _CSV.values()))
    rows = map(",".join, zip(*columns, strict=True))
    return "\n".join([head, *rows]) + "\n"


def _csv_column(values: pd.Series) -> list[str]:
    if pd.api.types.is_bool_dtype(values) or pd.api.types.is_integer_dtype(values):
        texts: list[str] = values.astype("string").fillna("").tolist()  # True, 3, "" for <NA>
        return texts
    if pd.api.types.is_float_dtype(values):
        return ["" if math.isnan(v) else repr(v) for v in values.tolist()]
    items: list[object] = values.tolist()
    if _plain(items):
        return cast("list[str]", items)
    return each_once(_csv_field, items)


def _plain(values: list[object]) -> bool:
    """Every value a string that _csv_field leaves as it is: no control character (what
    `clean` takes out), nothing csv quotes, no formula's first character. One scan of the
    column joined, one set of first characters."""
    if not values or set(map(type, values)) != {str}:
        return False
    texts = cast("list[str]", values)
    joined = "".join(texts)
    if not (joined.isascii() and joined.isprintable()) or '"' in joined or "," in joined:
        return False
    # Each text's first character (none for ""), gathered in C: a regex over the column joined
    # by line breaks took four times as long.
    return _FORMULA.isdisjoint(map(_FIRST, texts))


_FORMULA = frozenset(FORMULA)
_FIRST = itemgetter(slice(0, 1))


def _csv_field(value: object) -> str:
    """A text neutralised (csv_field); a missing value empty; anything else as str(); quoted
    as csv.writer quotes it."""
    if isinstance(value, str):
        return _quoted(csv_field(value))
    return "" if pd.isna(value) else _quoted(str(value))


def _quoted(text: str) -> str:
    """csv.writer's QUOTE_MINIMAL with "\n" as the line end: a field holding the delimiter,
    the quote character or a character of the line end is quoted, its quotes doubled."""
    if '"' in text:
        return '"' + text.replace('"', '""') + '"'
    if "," in text or "\n" in text:
        return '"' + text + '"'
    return text


def xml_safe(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def classname(framework: str, stack: str) -> str:
    """`torch.torch-2_15_0_cu13_2_cudnn9_26_py3_11_offline`: no dot but the one after the
    framework, so a CI tool's package is the framework and its class the stack."""
    return f"{framework.replace('.', '_')}.{stack.replace('.', '_')}"


# What _child reads of a row, in its parameters' order.
_CHILD = ("klass", "expected", "verdict", "reproduce", "obs_line", "obs_exit", "error", "because")


def _child(  # noqa: PLR0917 (a row's fields, given by map over the columns)
    klass: str, expected: str, verdict: str, reproduce: str, obs_line: str, obs_exit: str,
    error: str, because: str,
) -> tuple[str, str, str]:  # fmt: skip
    """(element, message, text) under a <testcase>: failure, error, skipped or system-out."""
    if klass == "pass":
        return "", "", ""
    seen = f"expected {expected}, observed {verdict}"
    again = f"reproduce: {reproduce or '(cell id not shown)'}"
    line = f"decisive line: {obs_line}\n" if obs_line else ""
    if klass == "drift":
        return "failure", f"{seen} (exit code {obs_exit})" if obs_exit else seen, line + again
    if klass == "timeout":
        return "failure", f"timed out ({seen})", line + again
    if klass == "errored":
        return "error", "the harness failed to run this cell", f"{error}\n{again}"
    if klass == "interrupted":
        return "skipped", "interrupted: not finished", ""
    if klass == PREDICTED:
        return "skipped", f"not run (predicted: {expected})", ""
    if klass == UNOBSERVABLE:
        why = f": {because}" if because else ""
        return "skipped", f"not observable here{why}", ""
    if klass == "expected-fail":
        return "system-out", "", f"failed as expected: {verdict}\n{line}{again}"
    return "", "", ""


_FIELDS: tuple[str, ...] = ("cell", "framework", "stack", "scenario", "klass", "expected")
_FIELDS += ("verdict", "obs_line")
_FIELDS += ("error", "backend", "because", "reproduce", *_PROPERTIES)


def _columns(frame: pd.DataFrame) -> dict[str, list[str]]:
    """The fields junit.xml shows, as text XML can hold."""
    cols = {c: frame[c].tolist() for c in dict.fromkeys(_FIELDS)}
    cols["obs_exit"] = frame["obs_exit"].astype("string").fillna("").tolist()
    cols["seconds"] = frame["seconds"].fillna(0).map("{:.3f}".format).tolist()
    return {name: _xml_safe_column(values) for name, values in cols.items()}


def _xml_safe_column(values: list[str]) -> list[str]:
    """xml_safe of each value; one scan of the whole column where none needs it (the frame
    holds no control characters, so almost every column): printable ASCII, checked in C a word
    at a time, needs no regex at all."""
    joined = "".join(values)
    if (joined.isascii() and joined.isprintable()) or _NOT_XML.search(joined) is None:
        return values
    return each_once(xml_safe, values)


def _text(text: str) -> str:
    """Character data escaped as ElementTree escapes it."""
    if "&" in text:
        text = text.replace("&", "&amp;")
    if "<" in text:
        text = text.replace("<", "&lt;")
    if ">" in text:
        text = text.replace(">", "&gt;")
    return text


def _attr(text: str) -> str:
    """An attribute value escaped as ElementTree escapes it (CR, LF and tab as references, so
    a reader keeps them)."""
    text = _text(text)
    if '"' in text:
        text = text.replace('"', "&quot;")
    if "\r" in text:
        text = text.replace("\r", "&#13;")
    if "\n" in text:
        text = text.replace("\n", "&#10;")
    if "\t" in text:
        text = text.replace("\t", "&#09;")
    return text


def _attrs(values: list[str]) -> list[str]:
    """_attr of each value: the values themselves where none holds a character it escapes (one
    scan of the column joined: a column of 100,000 stack names), else each distinct one once."""
    joined = "".join(values)
    return each_once(_attr, values) if any(c in joined for c in '&<>"\r\n\t') else values


def _element(kind: str, message: str, klass: str, text: str) -> str:
    """The failure, error, skipped or system-out element of a testcase ("" for none)."""
    if not kind:
        return ""
    attrs = "" if kind == "system-out" else f' message="{_attr(message)}" type="{_attr(klass)}"'
    return f"<{kind}{attrs}>{_text(text)}</{kind}>" if text else f"<{kind}{attrs} />"


def _property(name: str, values: list[str]) -> list[str]:
    start = f'<property name="{_attr(name)}" value="'
    return each_once(lambda v: f'{start}{v}" />', _attrs(values))


def junit_xml(frame: pd.DataFrame) -> str:
    """Written as text, byte for byte what ElementTree wrote (attribute order, ` />`, its
    escapes): 100,000 elements and their serialization took seconds. A field that repeats
    (most do) is escaped and written once."""
    cols = _columns(frame)
    pairs = list(zip(cols["framework"], cols["stack"], strict=True))
    heads = zip(
        _attrs(each_once(lambda p: classname(*p), pairs)),
        _attrs(cols["scenario"]),
        _attrs(cols["seconds"]),
        strict=True,
    )
    starts = [f'<testcase classname="{c}" name="{n}" time="{t}"><properties>' for c, n, t in heads]
    props = [_property(name, cols[col]) for col, name in _PROPERTIES.items()]
    children = list(map(_child, *(cols[c] for c in _CHILD)))
    ends = [
        f"</properties>{_element(kind, message, klass, text)}</testcase>"
        for (kind, message, text), klass in zip(children, cols["klass"], strict=True)
    ]
    kinds = Counter(kind for kind, _, _ in children)
    tally = "".join(
        f' {attr}="{kinds[kind]}"'
        for kind, attr in (("failure", "failures"), ("error", "errors"), ("skipped", "skipped"))
    )
    seconds = f"{frame['seconds'].fillna(0).sum():.3f}"
    suite = f'<testsuite name="stackmatrix" tests="{len(children)}"{tally} time="{seconds}"'
    cases = "".join(map("".join, zip(starts, *props, ends, strict=True)))
    suite += f">{cases}</testsuite>" if children else " />"
    return f"<?xml version='1.0' encoding='utf-8'?>\n<testsuites>{suite}</testsuites>\n"
