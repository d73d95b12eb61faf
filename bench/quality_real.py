"""Decision quality on real scans: precision and recall of every rule on labelled real pages.

FOLDER holds `labels.jsonl` (one line per page: `file`, `has_illustration`, `borderline`, `dpi`, `kind`)
and the page images under `pages/`, like `../shared/realdata`. Each image becomes a one-page PDF the
way a scanning project publishes it (page size = pixels × 72 / dpi), the corpus is ingested with the
real engine, and the figures are read from the manifest:

- precision and recall of σ > 45 (the original method) and of the picture rule at the saved cutoff
  (the default decision), with every page the default gets wrong;
- the learning curve: a curator overrides N pages picked at random, the model is fitted on them
  (beside the rule's own decisions, as `learn` does), and its agreement with the labels on the
  remaining pages is taken (mean and worst over draws);
- what the page analysis costs per page (ms, at the reference 144 dpi).

    python bench/quality_real.py [FOLDER] [--draws 25]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import time

import numpy as np
import PIL.Image
import pymupdf

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from curation import Manifest  # noqa: E402
from curation.decisions.learn import FEATURES, suggest  # noqa: E402
from curation.scoring.features import page_features  # noqa: E402
from curation.scoring.scorer import _gray_at_reference  # noqa: E402

LEARNING_SIZES = (5, 10, 15, 20)


def build(folder: pathlib.Path, corpus: pathlib.Path) -> dict[str, dict]:
    """One PDF per labelled page image (written once); the labels by PDF path."""
    corpus.mkdir(parents=True, exist_ok=True)
    labels = {}
    for line in (folder / "labels.jsonl").read_text().splitlines():
        label = json.loads(line)
        image = folder / "pages" / label["file"]
        pdf = (corpus / image.with_suffix(".pdf").name).resolve()
        if not pdf.exists():
            data = image.read_bytes()
            with PIL.Image.open(image) as picture:  # reads the header only
                width, height = picture.size
            with pymupdf.open() as doc:
                page = doc.new_page(width=width * 72 / label["dpi"], height=height * 72 / label["dpi"])
                page.insert_image(page.rect, stream=data)
                doc.save(pdf)
        labels[str(pdf)] = label
    return labels


def precision_recall(predicted: np.ndarray, actual: np.ndarray) -> tuple[float, float]:
    hits = int((predicted & actual).sum())
    return hits / max(1, int(predicted.sum())), hits / max(1, int(actual.sum()))


def report(name: str, predicted: np.ndarray, actual: np.ndarray) -> None:
    precision, recall = precision_recall(predicted, actual)
    print(f"{name:34s} precision {precision:.2f}  recall {recall:.2f}  "
          f"(kept {int(predicted.sum())}, of which {int((predicted & actual).sum())} illustrated)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", nargs="?", type=pathlib.Path, default=ROOT.parent / "shared" / "realdata")
    parser.add_argument("--draws", type=int, default=25)
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "bench" / "out" / "quality_real")
    args = parser.parse_args()
    if not (args.folder / "labels.jsonl").exists():
        sys.exit(f"no labels.jsonl in {args.folder}: give a folder like ../shared/realdata")

    labels = build(args.folder, args.out / "corpus")
    db = args.out / "quality.sqlite"
    subprocess.run([sys.executable, "-m", "curation", "ingest", str(args.out / "corpus"), "--db", str(db), "-q"],
                   cwd=ROOT, check=True)
    with Manifest(db) as manifest:
        rows = [dict(r) for r in manifest.pages() if r["doc"] in labels and r["status"] == "ok"]
        cutoff = manifest.picture_area_min
    actual = np.array([labels[r["doc"]]["has_illustration"] for r in rows])
    borderline = np.array([labels[r["doc"]].get("borderline", False) for r in rows])
    print(f"corpus: {len(rows)} real pages from {args.folder}, {int(actual.sum())} illustrated, "
          f"{int(borderline.sum())} borderline (counted as not illustrated)")
    report("sigma > 45 (the original method)", np.array([r["sigma"] > 45 for r in rows]), actual)
    default = np.array([bool(r["keep"]) for r in rows])
    report(f"default: picture rule, >= {cutoff:g} sq in", default, actual)
    for r, keep, truth in zip(rows, default, actual):
        if keep != truth:
            print(f"    {'kept' if keep else 'missed'}: {pathlib.Path(r['doc']).stem[:60]} "
                  f"(largest picture {r['picture_area']:.2f} sq in, {r['picture_count']} pictures)")

    features = np.array([[r[f] for f in FEATURES] for r in rows], dtype=float)
    print(f"learning curve (overrides on random pages, {args.draws} draws): agreement on the other pages")
    rng = np.random.default_rng(0)
    for size in LEARNING_SIZES:
        if size >= len(rows):
            break
        scores = []
        for _ in range(args.draws):
            picked = rng.choice(len(rows), size, replace=False)
            result = suggest(features[picked], actual[picked], features, prior=default)
            if result is not None:
                rest = np.setdiff1d(np.arange(len(rows)), picked)
                scores.append(float((result.keep[rest] == actual[rest]).mean()))
        line = (f"mean {np.mean(scores):.3f}, worst {np.min(scores):.3f} ({len(scores)} of {args.draws} draws "
                f"had both decisions)" if scores else "no draw had both decisions")
        print(f"  {size:3d} overrides: {line}")
    cost(list(labels))


def cost(paths: list[str]) -> None:
    """Page analysis cost beside the rest of scoring, per page, in this process."""
    analysis, pixels = [], 0
    for path in paths:
        with pymupdf.open(path) as doc:
            gray, _, _ = _gray_at_reference(doc, doc[0])
        start = time.perf_counter()
        page_features(gray)
        analysis.append(time.perf_counter() - start)
        pixels += gray.size
    print(f"features incl. page analysis: {1000 * np.mean(analysis):.0f} ms/page on average at 144 dpi "
          f"({pixels / len(paths) / 1e6:.1f} Mpx/page), {1e9 * sum(analysis) / pixels:.1f} ms per Mpx")


if __name__ == "__main__":
    main()
