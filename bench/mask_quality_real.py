"""How well the masks the export writes fit the pictures on real scans, leave one source out.

Each page of FOLDER (laid out like ../shared/realdata: labels.jsonl, pictures.jsonl with every picture boxed by
hand, pages/) is read as ingest reads it (144 dpi) with the finder's cells from heads that learned from none of its
source's pages: the cells the finder's recipe keeps under --cache (`held_out_cells.pkl`, made by
`python -m curation.pictures.picture_judge_train FOLDER ../shared/boxed`). The finder's pictures are made from them
with the settings chosen on the other sources (curation.pictures.finder_train.leave_one_source_out; --shipped: the
shipped settings, quicker), counted as ingest counts them (score at or above the settings' cutoff, at least the
picture rule's default size), and each one's mask made as the export makes it (curation.pictures.region: the
picture's region within its box).

For every counted picture boxed by hand that the finder's boxes found (a box lying at least half in it, grown by 2 %
of the page's shorter side, as curation.pictures.judge calls a box right), the masks of the boxes on it give:

- covered: the share of the hand-drawn box the mask covers (goal >= 0.95);
- outside: the share of the mask outside the hand-drawn boxes of the page's counted pictures, each grown by 1 % of
  the page's shorter side (the judge's clean margin: a box that hugs the picture exactly takes in that much paper;
  a box over two pictures side by side lies on both) (goal <= 0.10);

beside the same figures for the boxes themselves as masks (what the export's mask was before a region: a box
learned whole). Per source and pooled (means over pictures, and the share of pictures meeting each goal).

    python bench/mask_quality_real.py [FOLDER] [--cache /work/cache/finder] [--shipped]
"""

from __future__ import annotations

import argparse
import pathlib
import pickle
import sys
import time
from dataclasses import replace

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from curation.pictures import finder  # noqa: E402
from curation.pictures import finder_train as recipe  # noqa: E402
from curation.pictures.judge import CLEAN_GROW, GROW, grow  # noqa: E402
from curation.pictures.region import picture_mask  # noqa: E402
from curation.scoring.pictures import DEFAULT_PICTURE_AREA_MIN  # noqa: E402

COVERED_GOAL, OUTSIDE_GOAL = 0.95, 0.10


def held_out(folder: pathlib.Path, cache: pathlib.Path) -> list[recipe.HeldOut]:
    """The measure's pages with their held-out cells, from the first held_out_cells.pkl under `cache`."""
    kept = sorted(cache.glob("*/held_out_cells.pkl"))
    if not kept:
        sys.exit(f"no held_out_cells.pkl under {cache}: run python -m curation.pictures.picture_judge_train "
                 f"{folder} ../shared/boxed --no-save first")
    with open(kept[0], "rb") as f:
        cells = pickle.load(f)
    return [recipe.HeldOut(page, recipe.at_reference(page), np.asarray(cells[page.file.name]))
            for page in recipe.measured_pages(folder) if page.file.name in cells]


def page_box(fractions, shape) -> tuple[int, int, int, int]:
    h, w = shape
    return (max(0, round(fractions[0] * w)), max(0, round(fractions[1] * h)),
            min(w, round(fractions[2] * w)), min(h, round(fractions[3] * h)))


def measured(seen: recipe.HeldOut, settings: finder.Settings) -> list[dict]:
    """Each counted hand-drawn picture the finder's counted boxes found on this page: its mask's figures and its
    boxes' as masks."""
    shape = seen.gray.shape
    h, w = shape
    pictures = [p for p in seen.pictures(settings)
                if p.score >= settings.score_cutoff and p.area >= DEFAULT_PICTURE_AREA_MIN]
    figures = []
    counted = [p["box"] for p in seen.page.labelled if p["counts"]]
    for truth in counted:
        grown = grow(truth, GROW, seen.page.aspect)
        on = [p for p in pictures if _share_inside(p.box, grown, shape) >= 0.5]
        if not on:
            continue
        span = (0, 0, w, h)
        x0, y0, x1, y1 = (min(p.box[i] for p in on) if i < 2 else max(p.box[i] for p in on) for i in range(4))
        span = (max(0, x0 - 50), max(0, y0 - 50), min(w, x1 + 50), min(h, y1 + 50))
        target = _raster(page_box(truth, shape), span)
        clean = np.zeros_like(target)  # a mask on another counted picture is not outside: it is that picture's
        for other in counted:
            clean |= _raster(page_box(grow(other, CLEAN_GROW, seen.page.aspect), shape), span)
        mask = np.zeros_like(target)
        boxes = np.zeros_like(target)
        for p in on:
            region = None if p.region is None else _encoded(p.region)
            mask |= picture_mask(span, p.box, region, p.box)
            boxes |= _raster(p.box, span)
        figures.append({"source": seen.page.source, "file": seen.page.file.name,
                        "covered": _covered(mask, target), "outside": _outside(mask, clean),
                        "box_covered": _covered(boxes, target), "box_outside": _outside(boxes, clean),
                        "with_region": any(p.region is not None for p in on)})
    return figures


def _encoded(region: np.ndarray) -> str:
    from curation.pictures.region import encode

    return encode(region)  # as stored: the export reads what the manifest holds


def _raster(box, span) -> np.ndarray:
    x0, y0, x1, y1 = span
    out = np.zeros((y1 - y0, x1 - x0), bool)
    bx0, by0, bx1, by1 = (max(box[0], x0), max(box[1], y0), min(box[2], x1), min(box[3], y1))
    if bx1 > bx0 and by1 > by0:
        out[by0 - y0:by1 - y0, bx0 - x0:bx1 - x0] = True
    return out


def _share_inside(box, fractions, shape) -> float:
    h, w = shape
    a = (box[2] - box[0]) * (box[3] - box[1])
    f = (fractions[0] * w, fractions[1] * h, fractions[2] * w, fractions[3] * h)
    iw, ih = min(box[2], f[2]) - max(box[0], f[0]), min(box[3], f[3]) - max(box[1], f[1])
    return max(0, iw) * max(0, ih) / a if a else 0.0


def _covered(mask: np.ndarray, target: np.ndarray) -> float:
    return float((mask & target).sum() / max(1, target.sum()))


def _outside(mask: np.ndarray, clean: np.ndarray) -> float:
    return float((mask & ~clean).sum() / max(1, mask.sum()))


def summary(rows: list[dict]) -> str:
    if not rows:
        return "no picture found"
    mean = {k: np.mean([r[k] for r in rows]) for k in ("covered", "outside", "box_covered", "box_outside")}
    meets = np.mean([r["covered"] >= COVERED_GOAL and r["outside"] <= OUTSIDE_GOAL for r in rows])
    box_meets = np.mean([r["box_covered"] >= COVERED_GOAL and r["box_outside"] <= OUTSIDE_GOAL for r in rows])
    return (f"{len(rows):3d} pictures: mask covers {mean['covered']:.3f}, outside {mean['outside']:.3f}, "
            f"both goals {meets:.2f} | box as mask {mean['box_covered']:.3f} / {mean['box_outside']:.3f}, "
            f"both goals {box_meets:.2f}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", type=pathlib.Path, default=ROOT.parent / "shared" / "realdata")
    parser.add_argument("--cache", type=pathlib.Path, default=pathlib.Path("/work/cache/finder"))
    parser.add_argument("--shipped", action="store_true",
                        help="the shipped settings for every source (quicker; not chosen leave one source out)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    held = held_out(args.folder, args.cache)
    sources = sorted({seen.page.source for seen in held})
    if args.shipped:
        settings_of = {source: finder.shipped_settings() for source in sources}
    else:
        settings_of = {source: chosen for source, (_, chosen) in recipe.leave_one_source_out(held).items()}
    print(f"{len(held)} pages, {len(sources)} sources; the finder's cells held out by source "
          f"({'shipped settings' if args.shipped else 'settings chosen on the other sources'})")
    pooled = []
    for source in sources:
        settings = replace(settings_of[source])
        rows = [row for seen in held if seen.page.source == source for row in measured(seen, settings)]
        pooled += rows
        print(f"  {source[:40]:40s} {summary(rows)}")
    print(f"  {'pooled':40s} {summary(pooled)}")
    worst = sorted(pooled, key=lambda r: r["covered"] - r["outside"])[:8]
    for r in worst:
        print(f"    worst: {r['file'][:60]:60s} covers {r['covered']:.2f}, outside {r['outside']:.2f}")
    print(f"goals: covered >= {COVERED_GOAL}, outside <= {OUTSIDE_GOAL}; {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
