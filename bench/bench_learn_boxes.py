"""Learn from my boxes on real pages: does the finder learned from a curator's boxes on a third of a collection's
pages find the pictures of the rest of it better?

For every source of FOLDER (laid out like ../shared/realdata) with at least MIN_PAGES pages: its pages become
one-page PDFs (as bench/quality_real.py makes them) ingested into a manifest of their own with `--pictures
network`; the true boxes of every third page (the first, the fourth, ...) are given through `boxes --from` (every
boxed picture, `counts` as labelled; --stratified: every third page holding a picture that counts and every third
of the others); `learn --boxes` runs; the pictures the manifest holds on the other pages
(those not deleted: what the finder found) are judged against their true boxes (curation.pictures.judge), before
and after. Printed per source and as the mean over sources: clean share and recall before and after, what learn
said, and its wall time.

Note: the shipped head (curation/pictures/finder.npz) was trained on every page of ../shared/realdata, these
included, so "before" is measured on pages the shipped finder learned from: it is optimistic, and leaves learn
less to correct than a collection nobody trained on would.

    python bench/bench_learn_boxes.py [FOLDER] [--out bench/out/learn_boxes]
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


def judged(db: pathlib.Path, pages: dict[str, tuple[dict, list[dict]]]) -> Tally:
    """The pictures the manifest holds on `pages` ({PDF name: (label, true boxes)}), judged."""
    held: dict[str, list] = {name: [] for name in pages}
    for row in map(json.loads, cli("pictures", "--db", db, "--format", "jsonl").splitlines()):
        name = pathlib.Path(row["doc"]).name
        if name in held and row["decided_by"] != "deleted":
            held[name].append((row["x0"], row["y0"], row["x1"], row["y1"]))
    tally = Tally()
    for name, (label, truth) in pages.items():
        tally.add(judge(held[name], truth, label["aspect"]))
    return tally


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
    said = subprocess.run([sys.executable, "-m", "curation", "learn", "--boxes", "--db", db, "-q"], cwd=ROOT,
                          capture_output=True, text=True)
    seconds = time.perf_counter() - started
    after = judged(db, rest)
    return {"source": source, "pages": len(pages), "boxed": len(boxed), "judged": len(rest),
            "before": {"clean_share": before.clean_share, "recall": before.recall, "precision": before.precision,
                       "counted": before.counted},
            "after": {"clean_share": after.clean_share, "recall": after.recall, "precision": after.precision,
                      "counted": after.counted},
            "learn_seconds": round(seconds, 1), "learn_said": (said.stdout + said.stderr).strip().splitlines()[-1:]}


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
        sources.setdefault(repository(label["source"]), []).append((pdf, label, truth))
    results = []
    for source, pages in sorted(sources.items()):
        if len(pages) < MIN_PAGES:
            continue
        with tempfile.TemporaryDirectory(prefix="learn-boxes-bench-") as work:
            result = one_source(source, sorted(pages), pathlib.Path(work), args.stratified)
        results.append(result)
        b, a = result["before"], result["after"]
        print(f"{source[:40]:40s} {result['pages']:3d} pages, {result['boxed']} boxed, {result['judged']} judged "
              f"({b['counted']} counted): clean {b['clean_share']:.2f} -> {a['clean_share']:.2f}, recall "
              f"{b['recall']:.2f} -> {a['recall']:.2f}, precision {b['precision']:.2f} -> {a['precision']:.2f}; "
              f"learn {result['learn_seconds']:.0f} s: {' '.join(result['learn_said'])}", flush=True)
    mean = {when: {name: float(np.nanmean([r[when][name] for r in results])) for name in ("clean_share", "recall")}
            for when in ("before", "after")}
    print(f"{'mean over sources':40s} clean {mean['before']['clean_share']:.2f} -> {mean['after']['clean_share']:.2f}, "
          f"recall {mean['before']['recall']:.2f} -> {mean['after']['recall']:.2f}; learn "
          f"{np.mean([r['learn_seconds'] for r in results]):.0f} s on average")
    (args.out / f"results{'-stratified' if args.stratified else ''}.json").write_text(json.dumps({"sources": results, "mean": mean}, indent=1) + "\n")


if __name__ == "__main__":
    main()
