"""`harness doctor`: probe this machine and name, with the catalog's signature ids, what will fail
before it does.

gather (the I/O: driver, interpreter, loader path, libraries, frameworks) -> facts (frozen
values and the parsing of what the probe prints) -> rules and cudnn (the findings, pure) -> text
(the readable account).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.compat import Knowledge
from harness.doctor import gather
from harness.doctor.facts import Facts, Finding, Severity
from harness.doctor.rules import findings
from harness.doctor.text import render
from harness.signatures import Catalog

__all__ = ["DoctorReport", "run"]


@dataclass(frozen=True, slots=True, kw_only=True)
class DoctorReport:
    facts: Facts
    findings: tuple[Finding, ...]

    @property
    def exit_code(self) -> int:
        return 1 if any(f.severity is Severity.FAIL for f in self.findings) else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": 1,
            **self.facts.to_json(),
            "findings": [f.to_json() for f in self.findings],
            "exit_code": self.exit_code,
        }

    def text(self) -> str:
        return render(self.facts, self.findings, self.exit_code)


def run(*, python: str, env: Mapping[str, str], kb: Knowledge, catalog: Catalog) -> DoctorReport:
    facts = gather.gather(python=python, env=env)
    return DoctorReport(facts=facts, findings=findings(facts, kb, catalog))
