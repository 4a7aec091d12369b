"""Score `harness diagnose` on one half of the public corpus (bench/corpus/manifest.json).

    python bench/corpus_eval.py --half tune            # while changing the catalog
    python bench/corpus_eval.py --half test --write    # once: bench/results/corpus-test.json

A log's prediction is the diagnosis' signature, or `no_failure` when it finds none. A benign log
(label `no_failure`) given any signature is a confident verdict on a benign log, counted apart.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from harness.diagnose import diagnosis
from harness.signatures import classify_chunks, read_catalog

ROOT = Path(__file__).resolve().parent.parent


def predict(path: Path, catalog: object) -> str:
    data = path.read_bytes()
    verdict = classify_chunks([data], catalog)  # type: ignore[arg-type]
    return diagnosis(verdict, catalog, ()).signature  # type: ignore[arg-type]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--half", choices=["tune", "test", "all"], default="tune")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    catalog = read_catalog(ROOT / "scenarios" / "signatures.yaml")
    rows = json.loads((ROOT / "bench/corpus/manifest.json").read_text())["logs"]
    rows = [r for r in rows if args.half == "all" or r["half"] == args.half]
    confusion: Counter[tuple[str, str]] = Counter()
    misses = []
    for r in rows:
        got = predict(ROOT / r["path"], catalog)
        confusion[(r["signature"], got)] += 1
        if got != r["signature"]:
            misses.append({"case": r["case"], "label": r["signature"], "got": got})
    right = sum(n for (a, b), n in confusion.items() if a == b)
    benign_confident = sum(
        n
        for (a, b), n in confusion.items()
        if a == "no_failure" and b not in ("no_failure", "unknown")
    )
    result = {
        "half": args.half,
        "logs": len(rows),
        "correct": right,
        "accuracy": round(right / len(rows), 4),
        "confident_on_benign": benign_confident,
        "confusion": [
            {"label": a, "predicted": b, "n": n} for (a, b), n in sorted(confusion.items())
        ],
        "misses": misses,
    }
    print(
        f"{args.half}: {right}/{len(rows)} = {result['accuracy']:.1%}, "
        f"confident on benign: {benign_confident}"
    )
    for m in misses:
        print(f"  miss {m['case']}: {m['label']} -> {m['got']}")
    if args.write:
        out = ROOT / "bench/results" / f"corpus-{args.half}.json"
        out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
