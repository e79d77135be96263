"""Measure search/relevance.py's MEANING_FLOOR: the cosine from which a hybrid hit counts as found by its
meaning too (`matched_by: "both"`), for the default embedder, on LoCoMo.

    .venv/bin/python bench/meaning_floor.py ../shared/data/locomo/locomo_dev.json

The hits are bench/calibrate_scores.py's: every question of categories 1-4 searched in hybrid mode (top
10), each hit labelled relevant when it is one of the question's evidence turns, with the cosine the
server computes. A logistic regression of relevance on the cosine alone gives the floor: the cosine
where a hit is as likely relevant as the average hit, so from there up its closeness in meaning is
evidence for it (relevant hits are denser than irrelevant ones). Also printed: the share relevant per
cosine band, and where the fit would reach even odds (usually beyond any cosine seen: LoCoMo labels only
the evidence turns relevant, so most hits of every band are not).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import anyio
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.calibrate_scores import collect, fit_logistic
from bench.harness import cli

BAND = 0.05


def main() -> None:
    parser = cli.parser(__doc__)
    parser.add_argument(
        "data", help="LoCoMo JSON (e.g. ../shared/data/locomo/locomo_dev.json); read, never copied"
    )
    args = parser.parse_args()
    conversations = anyio.run(collect, Path(args.data), "hybrid")
    cosines, relevant = [], []
    for _, signals, labels in conversations:
        for query_signals, query_labels in zip(signals, labels, strict=True):
            cosines += [s.cosine or 0.0 for s in query_signals]
            relevant += query_labels
    x = np.asarray(cosines, dtype=np.float64)
    y = np.asarray(relevant, dtype=np.float64)
    base = float(y.mean())
    bias, slope = fit_logistic(x[:, None], y)
    floor = (math.log(base / (1 - base)) - bias) / slope
    print(f"{len(y)} hits, {int(y.sum())} relevant (base rate {base:.3f})")
    print("\n| cosine | hits | share relevant |\n|---|---:|---:|")
    for low in np.arange(0.0, 1.0, BAND):
        inside = (x >= low) & (x < low + BAND)
        if inside.any():
            print(f"| {low:.2f}-{low + BAND:.2f} | {int(inside.sum())} | {y[inside].mean():.3f} |")
    print(f"\nfit: relevance = logistic({bias:.4f} + {slope:.4f} * cosine)")
    print(f"even odds at cosine {-bias / slope:.3f} (highest cosine seen {x.max():.3f})")
    print(f"MEANING_FLOOR (as likely relevant as the average hit) = {floor:.2f}")


if __name__ == "__main__":
    main()
