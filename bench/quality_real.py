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
  size) judged right, neither or wrong, clean or not, and the counted pictures found; picture precision,
  recall and clean share per source and pooled, each wrong crop named by what it lies on, and every page
  with a wrong crop or a missed picture;
- the learned verdict's pictures (curation.pictures), leave one source out: for each source, trained and
  tuned on the others and judged on it; per source and pooled;
- the picture finder's pictures (curation.pictures.finder), leave one source out, and leave one collection out
  on `../shared/boxed` (its recipe's measure: curation.pictures.finder_train), alone and with its judge
  (curation.pictures.picture_judge_train);
- the pictures' printed legends (bench/legend_quality.py), leave one source out: character accuracy and
  legends read where none is printed, from the labelled boxes and from the boxes the finder finds, and the
  target's figures (characters pooled over legends of two or more characters);
- the pictures' kinds suggested from their look (curation.pictures.kind_train), leave one source out: right,
  wrong and unsure per source, pooled and the mean over sources (../shared/boxed, beside FOLDER, learned from);
- what the page analysis costs per page (ms, at the reference 144 dpi).

How a picture is judged: the folder's README, as curation.pictures.judge implements it.

    python bench/quality_real.py [FOLDER] [--draws 25]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

import numpy as np
import pymupdf

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from curation import Manifest  # noqa: E402
from curation.decisions.learn import FEATURES, suggest  # noqa: E402
from curation.scoring.features import page_features  # noqa: E402
from curation.pictures import kind_train, train  # noqa: E402
from curation.pictures.judge import Tally, area, judge, meet  # noqa: E402
from curation.scoring.scorer import _gray_at_reference  # noqa: E402
import legend_quality  # noqa: E402  (beside this file)
from realdata import build  # noqa: E402  (beside this file)

LEARNING_SIZES = (5, 10, 15, 20)


def what_it_is(box, counted, aspect: float) -> str:
    """What a wrong crop most likely shows, from where it lies and its shape: the labels box pictures only."""
    x0, y0, x1, y1 = box
    if any(area(meet(box, c)) > 0 for c in counted):
        return "loose (takes in a picture and more)"
    width, height = (x1 - x0) * aspect, y1 - y0  # in units of the page's height
    if area(box) > 0.4:
        return "whole page"
    if y0 < 0.2 and width > 2.5 * height:
        return "masthead or headline"
    if width > 3 * height:
        return "wide: headline or ad lettering"
    if height > 2.5 * width:
        return "text column"
    return "other (boxed text, type, handwriting)"


def picture_report(pages: list[tuple[str, str, list, list[dict], float]], title: str) -> Tally:
    """Print picture precision, recall and clean share over `pages` (name, source, kept boxes, labelled
    pictures, aspect) per source and pooled, the wrong crops by kind and the pages with a mistake."""
    by_source: dict[str, Tally] = {}
    kinds: dict[str, int] = {}
    lines = []
    for name, source, kept, labelled, aspect in pages:
        result = judge(kept, labelled, aspect)
        by_source.setdefault(source, Tally()).add(result)
        mistakes = []
        for box, verdict in zip(kept, result["verdicts"]):
            if verdict == "wrong":
                kind = what_it_is(box, result["counted"], aspect)
                kinds[kind] = kinds.get(kind, 0) + 1
                mistakes.append(f"wrong crop [{', '.join(f'{v:.2f}' for v in box)}]: {kind}")
        for box, hit in zip(result["counted"], result["found"]):
            if not hit:
                mistakes.append(f"missed [{', '.join(f'{v:.2f}' for v in box)}]")
        if mistakes:
            lines.append(f"    {name[:60]}: " + "; ".join(mistakes))
    pooled = Tally()
    print(title)
    for source, tally in sorted(by_source.items()):
        pooled += tally
        print(f"  {source[:44]:44s} {tally.line()}")
    print(f"  {'pooled':44s} {pooled.line()}")
    if kinds:
        print("  wrong crops by kind: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1])))
    print("\n".join(lines))
    return pooled


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
            pages.append((pathlib.Path(r["doc"]).stem, labels[r["doc"]]["source"].split("@")[0], kept, boxed[file],
                          r["width"] / r["height"]))
        picture_report(pages, "pictures of the rule-based finder (--crop pictures; its constants were set on files "
                              "01-42: not a held-out figure there)")
        learned(args.folder, args.out / "picture_candidates")
        network(args.folder, args.folder.parent / "boxed")
        legend_quality.report(args.folder, args.out / "corpus")
        kinds(args.folder)

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


def learned(folder: pathlib.Path, cache: pathlib.Path) -> None:
    """The learned verdict's pictures, leave one source out (curation.pictures.train), with its cost."""
    started = time.perf_counter()
    pages = train.read_folder(folder, cache)
    print(f"learned verdict: {len(pages)} pages, {sum(len(p.boxes) for p in pages)} candidates "
          f"(candidates and embeddings {time.perf_counter() - started:.0f} s, cached in {cache})")
    lines, _ = train.table(train.leave_one_source_out(pages))
    print("pictures of the learned verdict, leave one source out (trained and tuned on the other sources):")
    print("\n".join(lines))


def network(folder: pathlib.Path, boxed: pathlib.Path) -> None:
    """The picture finder's pictures (curation.pictures.finder), as its recipe measures them: leave one source out
    on `folder`, and leave one collection out on the boxed pages beside it (their collections grouped by
    repository, as the recipe groups sources). Its features are cached where the recipe keeps them; each fold's
    heads are trained once and kept there too (about three minutes a fold and a seed on one core; a head a core at a
    time)."""
    import torch

    from curation.pictures import finder, finder_train as recipe

    torch.set_num_threads(1)
    folders = [folder] + ([boxed] if (boxed / "labels.jsonl").exists() else [])
    shipped = finder.record()  # the shipped heads' recipe: its seeds, the pages each head learned from and its steps
    heads = tuple((h["composed"], h["steps"]) for h in shipped["heads"])
    composed = max(n for n, _ in heads)
    runs = recipe.runs_of(folders, tuple(shipped["seeds"]), composed)
    for measure, title in ((folder, "leave one source out"), (boxed, "leave one collection out, boxed pages")):
        if measure not in folders:
            print(f"picture finder, {title}: no {measure}")
            continue
        held_out = recipe.held_out_cells(runs, recipe.measured_pages(measure), heads, composed,
                                         workers=os.cpu_count() or 1)
        lines, _, _ = recipe.table(recipe.leave_one_source_out(held_out))
        print(f"pictures of the picture finder at the default size, {title} (trained on pages holding none of the "
              f"source's material, settings chosen on the other sources):")
        print("\n".join(lines))
        judged(held_out, title)


def judged(held_out: list, title: str) -> None:
    """The finder's pictures on the same held-out cells with its judge (curation.pictures.picture_judge_train),
    the judge fitted and its cutoff chosen on the other sources' boxes."""
    from curation.pictures import finder_train as recipe, picture_judge_train

    results = picture_judge_train.leave_one_source_out(held_out, lambda message: None)
    print(f"pictures of the picture finder with its judge, {title} (the judge learned on the other sources' boxes):")
    pooled = {"alone": recipe.Tally(), "judged": recipe.Tally()}
    for source, result in results.items():
        for way in pooled:
            pooled[way] += result[way]
        print(f"  {source[:46]:46s} {result['judged'].line()}")
    for way, tally in pooled.items():
        print(f"  {'pooled, ' + ('the finder alone' if way == 'alone' else 'with its judge'):46s} {tally.line()}")


def kinds(folder: pathlib.Path) -> None:
    """The kinds suggested from the pictures' look, leave one source out, from the shipped model's inputs (the
    look measures alone need no network: seconds); the training-only ../shared/boxed learned from where it lies
    beside FOLDER."""
    extra = [path for path in (folder.parent / "boxed",) if (path / "pictures.jsonl").exists()]
    examples = kind_train.read_all(folder, extra, ROOT / "bench" / "out" / "kinds",
                                   embed=kind_train.SHIPPED_INPUTS != "look")
    kind_train.report(examples, (kind_train.SHIPPED_INPUTS,))


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
