"""Learn from my boxes on real pages: do the finder and the judge learned from a curator's boxes on a third of a
collection's pages find and count the pictures of the rest of it better?

For every source of FOLDER (laid out like ../shared/realdata; in ../shared/boxed, every collection) with at least
MIN_PAGES pages: its pages become one-page PDFs (as bench/quality_real.py makes them) ingested into a manifest of
their own with `--pictures network`; the true boxes of every third page (the first, the fourth, ...) are given
through `boxes --from` (every boxed picture, `counts` as labelled; --stratified: every third page holding a picture
that counts and every third of the others); `learn --boxes` runs (the finder's heads, then the archive's judge,
curation.runs.learn_judge); the pictures the manifest holds on the other pages are judged against their true boxes
(curation.pictures.judge), before and after: those that count (what an export takes: the judge moves them) and
every one not deleted (what the finder found). Printed per source, pooled and as the mean over sources: precision,
recall and clean share before and after, what learn said, and its wall time (busy or quiet: say which).

This is learning within a source from the curator's marks on its other pages, the product's situation, not leave
one source out. And the shipped head (curation/pictures/finder.npz) was trained on every page of
../shared/realdata, these included, so "before" is measured on pages the shipped finder learned from: it flatters
the finder, and leaves learn less to correct than a collection nobody trained on would.

    python bench/bench_learn_boxes.py [FOLDER] [--stratified] [--out bench/out/learn_boxes]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import PIL.Image

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from curation.pictures.finder_train import read_labels, repository  # noqa: E402
from curation.pictures.judge import Tally, judge  # noqa: E402
from realdata import build  # noqa: E402  (beside this file)

MIN_PAGES = 6
BOXED_EVERY = 3  # the curator boxes every third page


def cli(*args) -> str:
    result = subprocess.run([sys.executable, "-m", "curation", *map(str, args)], cwd=ROOT, capture_output=True,
                            text=True)
    if result.returncode != 0:
        raise SystemExit(f"`curation {' '.join(map(str, args[:2]))}` failed: {result.stderr.strip()[-2000:]}")
    return result.stdout


def judged(db: pathlib.Path, pages: dict[str, tuple[dict, list[dict]]]) -> dict[str, Tally]:
    """The pictures the manifest holds on `pages` ({PDF name: (label, true boxes)}), judged: every one not deleted
    ("held": what the finder found), and those that count ("counted": at or above the score cutoff, or kept by a
    curator), what an export takes."""
    held: dict[str, dict[str, list]] = {"held": {name: [] for name in pages}, "counted": {name: [] for name in pages}}
    for row in map(json.loads, cli("pictures", "--db", db, "--format", "jsonl").splitlines()):
        name = pathlib.Path(row["doc"]).name
        if name in pages and row["decided_by"] != "deleted":
            box = (row["x0"], row["y0"], row["x1"], row["y1"])
            held["held"][name].append(box)
            if row["keep"]:
                held["counted"][name].append(box)
    tallies = {}
    for which, boxes in held.items():
        tallies[which] = Tally()
        for name, (label, truth) in pages.items():
            tallies[which].add(judge(boxes[name], truth, label["aspect"]))
    return tallies


def figures(tally: Tally) -> dict:
    return {"precision": tally.precision, "recall": tally.recall, "clean_share": tally.clean_share,
            "right": tally.right, "wrong": tally.wrong, "clean": tally.clean, "found": tally.found,
            "counted": tally.counted}


def boxed_pages(pages: list[tuple[str, dict, list[dict]]], stratified: bool) -> list[bool]:
    """Which pages the curator boxes: every third (the first, the fourth, ...); `stratified`: every third of those
    holding a picture that counts and every third of the others, as a curator fixing the boxes they see would."""
    if not stratified:
        return [i % BOXED_EVERY == 0 for i in range(len(pages))]
    illustrated = [any(p["counts"] for p in truth) for _, _, truth in pages]
    seen = {True: 0, False: 0}
    chosen = []
    for group in illustrated:
        chosen.append(seen[group] % BOXED_EVERY == 0)
        seen[group] += 1
    return chosen


def one_source(source: str, pages: list[tuple[str, dict, list[dict]]], work: pathlib.Path,
               stratified: bool = False) -> dict:
    folder = work / "archive"
    folder.mkdir(parents=True)
    for pdf, _, _ in pages:
        shutil.copy(pdf, folder)
    db = work / "manifest.sqlite"
    cli("ingest", folder, "--db", db, "-q", "--pictures", "network", "--workers", 1)
    chosen = boxed_pages(pages, stratified)
    boxed = [page for page, given in zip(pages, chosen) if given]
    rest = {pathlib.Path(pdf).name: (label, truth) for (pdf, label, truth), given in zip(pages, chosen) if not given}
    (work / "boxes.jsonl").write_text("".join(
        json.dumps({"doc": pathlib.Path(pdf).name, "page": 1,
                    "pictures": [{"box": p["box"], "counts": p["counts"]} for p in truth]}) + "\n"
        for pdf, _, truth in boxed))
    cli("boxes", "--from", work / "boxes.jsonl", "--db", db)
    before = judged(db, rest)
    started = time.perf_counter()
    said = subprocess.run([sys.executable, "-m", "curation", "learn", "--boxes", "--judge", "--db", db, "-q"], cwd=ROOT,
                          capture_output=True, text=True)
    seconds = time.perf_counter() - started
    after = judged(db, rest)
    return {"source": source, "pages": len(pages), "boxed": len(boxed), "judged": len(rest),
            **{f"{when}_{which}": figures(tally[which]) for when, tally in (("before", before), ("after", after))
               for which in ("held", "counted")},
            "tallies": {when: tally for when, tally in (("before", before), ("after", after))},
            "learn_seconds": round(seconds, 1), "learn_said": (said.stdout + said.stderr).strip().splitlines()[-1:]}


def line(name: str, before: dict, after: dict) -> str:
    return " ".join(f"{label} {before[key]:.2f} -> {after[key]:.2f}," for key, label in (
        ("precision", "precision"), ("recall", "recall"), ("clean_share", "clean")))[:-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", nargs="?", type=pathlib.Path, default=ROOT.parent / "shared" / "realdata")
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "bench" / "out" / "learn_boxes")
    parser.add_argument("--stratified", action="store_true",
                        help="box every third page holding a picture and every third of the others")
    args = parser.parse_args()
    if not (args.folder / "pictures.jsonl").exists():
        raise SystemExit(f"no labelled pages at {args.folder} (see ../shared/realdata/README.md)")
    args.out.mkdir(parents=True, exist_ok=True)
    labels = build(args.folder, args.out / "corpus")
    by_file = {label["file"]: pdf for pdf, label in labels.items()}
    sources: dict[str, list] = {}
    for label, truth in read_labels(args.folder):
        pdf = by_file.get(label["file"])
        if pdf is None:
            continue
        with PIL.Image.open(args.folder / "pages" / label["file"]) as image:
            label = {**label, "aspect": image.size[0] / image.size[1]}
        # ../shared/boxed names each page's collection; ../shared/realdata its source's repository.
        sources.setdefault(label.get("collection") or repository(label["source"]), []).append((pdf, label, truth))
    results = []
    for source, pages in sorted(sources.items()):
        if len(pages) < MIN_PAGES:
            continue
        with tempfile.TemporaryDirectory(prefix="learn-boxes-bench-") as work:
            result = one_source(source, sorted(pages), pathlib.Path(work), args.stratified)
        results.append(result)
        print(f"{source[:40]:40s} {result['pages']:3d} pages, {result['boxed']} boxed, {result['judged']} judged "
              f"({result['before_counted']['counted']} counted pictures): counted: "
              f"{line(source, result['before_counted'], result['after_counted'])}; every box held: "
              f"{line(source, result['before_held'], result['after_held'])}; learn {result['learn_seconds']:.0f} s: "
              f"{' '.join(result['learn_said'])}", flush=True)
    summary = {}
    for which in ("counted", "held"):
        pooled = {}
        for when in ("before", "after"):
            pooled[when] = Tally()
            for result in results:
                pooled[when] += result["tallies"][when][which]
        mean = {when: {name: float(np.nanmean([r[f"{when}_{which}"][name] for r in results]))
                       for name in ("precision", "recall", "clean_share")} for when in ("before", "after")}
        summary[which] = {"pooled": {when: figures(t) for when, t in pooled.items()}, "mean": mean}
        print(f"{'pooled, ' + which:40s} {line('', figures(pooled['before']), figures(pooled['after']))}")
        print(f"{'mean over sources, ' + which:40s} {line('', mean['before'], mean['after'])}")
    print(f"learn: {np.mean([r['learn_seconds'] for r in results]):.0f} s on average, "
          f"{max(r['learn_seconds'] for r in results):.0f} s at most")
    for result in results:
        del result["tallies"]
    name = f"results{'-stratified' if args.stratified else ''}.json"
    (args.out / name).write_text(json.dumps({"folder": str(args.folder), "sources": results, **summary}, indent=1) + "\n")


if __name__ == "__main__":
    main()
