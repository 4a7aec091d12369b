"""results.csv is joined in C (export.csv_text); it must be byte for byte what the csv module
writes of the same fields, whatever text the results hold."""

from __future__ import annotations

import csv
import io
import math

import pandas as pd  # type: ignore[import-untyped]
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.report.export import _CSV, csv_text
from harness.report.frame import build_frame
from harness.report.read import read_plans, read_results, read_rows
from harness.report.rows import rows_of
from harness.report.safe import csv_field
from tests.conftest import ROOT


def reference(frame: pd.DataFrame) -> str:
    """The fields as csv_text makes them, written by csv.writer."""

    def field(v: object) -> str:
        if isinstance(v, str):
            return csv_field(v)
        return "" if pd.isna(v) else str(v)

    def column(values: pd.Series) -> list[str]:
        if pd.api.types.is_bool_dtype(values) or pd.api.types.is_integer_dtype(values):
            return list(values.astype("string").fillna("").tolist())
        if pd.api.types.is_float_dtype(values):
            return ["" if math.isnan(v) else repr(v) for v in values.tolist()]
        return [field(v) for v in values.tolist()]

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(_CSV.values())
    writer.writerows(zip(*(column(frame[c]) for c in _CSV), strict=True))
    return out.getvalue()


def committed() -> pd.DataFrame:
    return build_frame(rows_of(read_results([ROOT / "reports/standin/results"])), [])


FRAME = committed()
TEXT = st.text(st.sampled_from([*'ab,"\n\t\r=+-@ \x1b\x00é', "\u2028", "x"]), max_size=8)
TEXT_COLUMNS = ["cell", "stack", "verdict", "obs_line", "because", "image", "gpu", "error"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(TEXT_COLUMNS), st.integers(0, 50), TEXT), max_size=12))
def test_csv_text_is_what_the_csv_module_writes(edits: list[tuple[str, int, str]]) -> None:
    frame = FRAME.copy()
    for col, row, text in edits:
        frame.at[row % len(frame), col] = text
    assert csv_text(frame) == reference(frame)


def test_the_committed_journals_make_the_same_csv_both_ways() -> None:
    for folder in ("reports/results", "reports/standin/results", "reports/releases/results"):
        frame = build_frame(read_rows([ROOT / folder]), read_plans([ROOT / folder]))
        assert csv_text(frame) == reference(frame), folder


def test_an_empty_frame_has_its_header_only() -> None:
    frame = FRAME.iloc[0:0]
    assert csv_text(frame) == reference(frame)
