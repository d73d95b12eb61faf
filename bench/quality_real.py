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
- picture by picture, where the folder has a `pictures.jsonl` (every picture boxed, in fractions of the
  page): the pictures an export with `--crop pictures` writes (those of kept pages at least the saved
  size) judged right, neither or wrong, and the counted pictures found; picture precision and recall,
  each wrong crop named by what it lies on, and every page with a wrong crop or a missed picture;
- what the page analysis costs per page (ms, at the reference 144 dpi).

How a picture is judged (the folder's README): a kept picture is right when at least half of its box
lies inside a counted box grown by 2 % of the page's shorter side, neither when it lies mostly inside a
not-counted box, wrong otherwise; a counted picture is found when kept boxes cover half of it.

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
GROW = 0.02  # a counted box is grown by this share of the page's shorter side when judging


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


def judge(kept: list[tuple[float, float, float, float]], labelled: list[dict], aspect: float) -> dict:
    """Kept boxes (fractions of the page) against the labelled pictures of one page; `aspect` is the
    page's width over its height. Returns the verdict of each kept box (right, neither or wrong, with
    what a wrong one lies on) and which counted pictures were found."""
    grow_x, grow_y = GROW * min(1.0, 1 / aspect), GROW * min(1.0, aspect)  # 2 % of the shorter side
    counted = [p["box"] for p in labelled if p["counts"]]
    others = [p["box"] for p in labelled if not p["counts"]]
    verdicts = []
    for box in kept:
        area = _area(box)
        inside_counted = max((_area(_meet(box, _grown(c, grow_x, grow_y))) for c in counted), default=0.0)
        inside_other = max((_area(_meet(box, o)) for o in others), default=0.0)
        if area and inside_counted >= 0.5 * area:
            verdicts.append(("right", ""))
        elif area and inside_other > 0.5 * area:
            verdicts.append(("neither", ""))
        else:
            verdicts.append(("wrong", what_it_is(box, counted, aspect)))
    found = [_covered(c, kept) >= 0.5 * _area(c) for c in counted]
    return {"verdicts": verdicts, "found": found, "counted": counted}


def what_it_is(box, counted, aspect: float) -> str:
    """What a wrong crop most likely shows, from where it lies and its shape: the labels box pictures only."""
    x0, y0, x1, y1 = box
    if any(_area(_meet(box, c)) > 0 for c in counted):
        return "loose (takes in a picture and more)"
    width, height = (x1 - x0) * aspect, y1 - y0  # in units of the page's height
    if _area(box) > 0.4:
        return "whole page"
    if y0 < 0.2 and width > 2.5 * height:
        return "masthead or headline"
    if width > 3 * height:
        return "wide: headline or ad lettering"
    if height > 2.5 * width:
        return "text column"
    return "other (boxed text, type, handwriting)"


def _area(box) -> float:
    return max(0.0, box[2] - box[0]) * max(0.0, box[3] - box[1])


def _meet(a, b):
    return max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])


def _grown(box, gx: float, gy: float):
    return box[0] - gx, box[1] - gy, box[2] + gx, box[3] + gy


def _covered(target, boxes, steps: int = 64) -> float:
    """The area of `target` the union of `boxes` covers (on a fine grid over the target)."""
    x0, y0, x1, y1 = target
    xs, ys = np.linspace(x0, x1, steps, endpoint=False), np.linspace(y0, y1, steps, endpoint=False)
    xs, ys = xs + (x1 - x0) / steps / 2, ys + (y1 - y0) / steps / 2
    gx, gy = np.meshgrid(xs, ys)
    hit = np.zeros(gx.shape, bool)
    for b in boxes:
        hit |= (gx >= b[0]) & (gx < b[2]) & (gy >= b[1]) & (gy < b[3])
    return float(hit.mean()) * _area(target)


def picture_report(pages: list[tuple[str, list, list[dict], float]]) -> tuple[float, float]:
    """Print picture precision and recall over `pages` (name, kept boxes, labelled pictures, aspect), the
    wrong crops by kind and the pages with a mistake; returns (precision, recall)."""
    right = wrong = neither = found = counted = 0
    kinds: dict[str, int] = {}
    lines = []
    for name, kept, labelled, aspect in pages:
        result = judge(kept, labelled, aspect)
        verdicts = [v for v, _ in result["verdicts"]]
        right, neither = right + verdicts.count("right"), neither + verdicts.count("neither")
        wrong += verdicts.count("wrong")
        found, counted = found + sum(result["found"]), counted + len(result["found"])
        mistakes = []
        for box, (verdict, kind) in zip(kept, result["verdicts"]):
            if verdict == "wrong":
                kinds[kind] = kinds.get(kind, 0) + 1
                mistakes.append(f"wrong crop [{', '.join(f'{v:.2f}' for v in box)}]: {kind}")
        for box, hit in zip(result["counted"], result["found"]):
            if not hit:
                mistakes.append(f"missed [{', '.join(f'{v:.2f}' for v in box)}]")
        if mistakes:
            lines.append(f"    {name[:60]}: " + "; ".join(mistakes))
    precision, recall = right / max(1, right + wrong), found / max(1, counted)
    print(f"{'pictures (--crop pictures)':34s} precision {precision:.2f}  recall {recall:.2f}  "
          f"(exported {right + wrong + neither}: {right} right, {neither} neither, {wrong} wrong; "
          f"{found} of {counted} counted pictures found)")
    if kinds:
        ranked = sorted(kinds.items(), key=lambda kv: -kv[1])
        print("  wrong crops by kind: " + ", ".join(f"{k} {n}" for k, n in ranked))
    print("\n".join(lines))
    return precision, recall


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

    boxes_file = args.folder / "pictures.jsonl"
    if boxes_file.exists():
        boxed = {json.loads(line)["file"]: json.loads(line)["pictures"] for line in boxes_file.read_text().splitlines()}
        with Manifest(db) as manifest:
            exported = manifest.pictures_at_least(cutoff)
        pages = []
        for r, keep in zip(rows, default):
            file = labels[r["doc"]]["file"]
            if file not in boxed:
                continue
            kept = [(x0 / r["width"], y0 / r["height"], x1 / r["width"], y1 / r["height"])
                    for _, x0, y0, x1, y1 in (exported.get((r["doc_id"], r["page"]), []) if keep else [])]
            pages.append((pathlib.Path(r["doc"]).stem, kept, boxed[file], r["width"] / r["height"]))
        picture_report(pages)

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
            gray, *_ = _gray_at_reference(doc, doc[0])
        start = time.perf_counter()
        page_features(gray)
        analysis.append(time.perf_counter() - start)
        pixels += gray.size
    print(f"features incl. page analysis: {1000 * np.mean(analysis):.0f} ms/page on average at 144 dpi "
          f"({pixels / len(paths) / 1e6:.1f} Mpx/page), {1e9 * sum(analysis) / pixels:.1f} ms per Mpx")


if __name__ == "__main__":
    main()
