"""Filter quality: how well the decision rules find the pages worth training on.

Generates a labelled corpus of periodical scans with the artifacts that fool sigma (dark scanner-bed
borders, bleed-through, uneven light, faded engravings, mixed pages, small ornaments, blank pages,
mastheads), ingests it with the real engine, and prints precision and recall of

- the original rule, sigma > 45
- the default rule (the picture rule, Manifest.rule), from the features computed during ingest

how many reprinted plates are grouped as near-duplicates, then the learning curve: agreement with the truth of the model fitted on N overrides, for a curator
who overrides N pages picked at random (mean and worst over repeated draws).

    python bench/quality.py [--docs 6] [--pages 40] [--dpi 200] [--pictures rules|learned|network]
"""

from __future__ import annotations

import argparse
import dataclasses
import pathlib
import subprocess
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from curation import Manifest  # noqa: E402
from curation.decisions.learn import FEATURES, suggest  # noqa: E402
from curation.sources.synthetic import periodical_specs, write_pdf  # noqa: E402

LEARNING_SIZES = (10, 15, 20, 30, 50)
DRAWS = 25


def build(folder: pathlib.Path, docs: int, pages: int, dpi: int) -> tuple[dict, dict]:
    """Write the corpus (once). Returns each page's kind by (path, page), and the reprints: the
    same plate rescanned in a later issue (new paper, light, grain, placement), by (path, page)
    -> the (path, page) of the first printing."""
    truth, reprints, plates = {}, {}, []
    for d in range(docs):
        specs = list(periodical_specs(pages, seed=7000 + d, dpi=dpi))
        path = str((folder / f"quality-{d:02d}.pdf").resolve())
        if d == 0:
            plates = [(n, spec) for n, spec in enumerate(specs) if spec.is_illustration][:docs - 1]
        elif d <= len(plates):  # each later issue reprints one plate of the first
            first, spec = plates[d - 1]
            slot = next(n for n, s in enumerate(specs) if s.kind == "text")
            specs[slot] = dataclasses.replace(spec, rescan=d, border=not spec.border)
            reprints[(path, slot)] = (str((folder / "quality-00.pdf").resolve()), first)
        if not pathlib.Path(path).exists():
            write_pdf(path, specs)
        truth.update({(path, n): spec.kind for n, spec in enumerate(specs)})
    return truth, reprints


def precision_recall(predicted: np.ndarray, actual: np.ndarray) -> tuple[float, float]:
    true_positive = int((predicted & actual).sum())
    return true_positive / max(1, int(predicted.sum())), true_positive / max(1, int(actual.sum()))


def report(name: str, predicted: np.ndarray, actual: np.ndarray, kinds: np.ndarray) -> None:
    precision, recall = precision_recall(predicted, actual)
    wrong = {k: int(((predicted != actual) & (kinds == k)).sum()) for k in np.unique(kinds)}
    wrong = ", ".join(f"{k} {n}" for k, n in wrong.items() if n) or "none"
    print(f"{name:24s} precision {precision:.3f}  recall {recall:.3f}   wrong by kind: {wrong}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=6)
    parser.add_argument("--pages", type=int, default=40)
    parser.add_argument("--dpi", type=int, default=200)
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "bench" / "out" / "quality")
    parser.add_argument("--pictures", choices=("rules", "learned", "network"), default="rules",
                        help="the pictures the picture rule reads: the page analysis's, checked by the learned "
                             "verdict, or the picture finder's")
    args = parser.parse_args()

    folder = args.out / "corpus"
    truth, reprints = build(folder, args.docs, args.pages, args.dpi)
    db = args.out / f"quality-{args.pictures}.sqlite"
    subprocess.run([sys.executable, "-m", "curation", "ingest", str(folder), "--db", str(db), "-q",
                    "--pictures", args.pictures], cwd=ROOT, check=True)
    with Manifest(db) as manifest:
        rows = manifest.conn.execute(
            f"SELECT d.path, p.page, {', '.join('p.' + f for f in FEATURES)} FROM pages p "
            "JOIN documents d ON d.id = p.doc_id WHERE p.status = 'ok' ORDER BY d.path, p.page"
        ).fetchall()
        rule_keep = {(r["doc"], r["page"]): bool(r["keep"]) for r in manifest.pages(rule="picture")}
        groups = {}
        for r in manifest.pages(where="g.group_id IS NOT NULL"):
            groups.setdefault(r["duplicate_group"], set()).add((r["doc"], r["page"]))
    kinds = np.array([truth[(r[0], r[1])] for r in rows])
    actual = np.isin(kinds, ["engraving", "mixed", "faded_engraving"])
    features = np.array([[r[f] for f in FEATURES] for r in rows], dtype=float)
    sigma = features[:, FEATURES.index("sigma")]
    print(f"corpus: {len(rows)} pages at {args.dpi} dpi, {actual.sum()} illustrations "
          f"({', '.join(f'{k} {n}' for k, n in zip(*np.unique(kinds, return_counts=True)))})")
    report("sigma > 45", sigma > 45, actual, kinds)
    rule = np.array([rule_keep[(r[0], r[1])] for r in rows])
    report(f"default rule ({args.pictures})", rule, actual, kinds)

    expected = [{reprint, first} for reprint, first in reprints.items()]
    found = sum(any(pair <= group for group in groups.values()) for pair in expected)
    spurious = sum(1 for group in groups.values() if not any(pair <= group for pair in expected))
    print(f"near-duplicates: {found} of {len(expected)} reprinted plates grouped with their first printing, "
          f"{spurious} groups of pages that are not reprints")

    print(f"learning curve (overrides on random pages, {DRAWS} draws each): agreement with the truth")
    rng = np.random.default_rng(0)
    for size in LEARNING_SIZES:
        scores = []
        for _ in range(DRAWS):
            picked = rng.choice(len(rows), size, replace=False)
            result = suggest(features[picked], actual[picked], features, prior=rule)
            if result is not None:
                scores.append(float((result.keep == actual).mean()))
        if scores:
            print(f"  {size:3d} overrides: mean {np.mean(scores):.3f}, worst {np.min(scores):.3f} "
                  f"({len(scores)} of {DRAWS} draws had both decisions to learn from)")
        else:
            print(f"  {size:3d} overrides: no draw had both decisions")


if __name__ == "__main__":
    main()
