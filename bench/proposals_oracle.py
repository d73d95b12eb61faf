"""What the picture stage's candidates could give at best: how many counted pictures have a clean candidate.

An oracle over the cached candidates of `python -m curation.pictures.train` (bench/out/picture_candidates):
a counted picture is *proposed clean* when any of its page's candidates, made into a picture's box the way a
kept one is (tightened to its non-text ink or as found, then the margin), is a clean crop of it
(curation.pictures.judge: at least 85 % of the crop inside the picture's box grown by 1 % of the shorter
side, holding at least 90 % of that box). No head is involved: it bounds what any verdict can keep clean.
Per source: pictures counted, proposed clean, and candidates a page (the cost); for each picture never
proposed clean, the candidate nearest to clean (the share of it inside the picture, the share of the picture
it holds) and its kind, so a miss reads as "only in part" (holds little) or "merged" (little inside).

    python bench/proposals_oracle.py [FOLDER] [--margin 0.01] [--as-found] [--unions 0.02 --parts 2]
                                     [--render FILE --out /tmp/x.png]

--unions GAP adds, as an experiment, the box around each two (or --parts 3: three) candidates that lie within
GAP (a share of the page's shorter side) of each other, neither inside the other: whether a picture proposed
in pieces would be proposed whole by joining them (docs/learned-pictures.md: 37 of 59 at 0.02, not kept).

The candidates are read as the training reads them (run the training, or this, once after a change to the
candidates: a page missing from the cache is proposed again, which takes the text detector's time).
"""

from __future__ import annotations

import argparse
import collections
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from curation.pictures import train  # noqa: E402
from curation.pictures.candidates import MEASURES  # noqa: E402
from curation.pictures.judge import CLEAN_GROW, CLEAN_HOLDS, CLEAN_INSIDE, area, grow, is_clean, meet  # noqa: E402


def picture_boxes(page: train.LabelledPage, margin: float, tighten: bool) -> list[tuple]:
    """Every candidate's box as a kept picture's would be: tightened or not, then grown by `margin`."""
    found = page.tight if tighten else page.boxes
    return [tuple(np.clip(grow(b, margin, page.aspect), 0, 1)) if margin else tuple(b) for b in found]


def unions(boxes: list[tuple], aspect: float, gap: float, parts: int) -> list[tuple]:
    """The boxes around up to `parts` neighbouring boxes (apart by at most `gap` of the shorter side across and
    down, neither inside the other), each once."""
    gx, gy = gap * min(1.0, 1 / aspect), gap * min(1.0, aspect)
    inside = lambda a, b: a[0] <= b[0] and a[1] <= b[1] and a[2] >= b[2] and a[3] >= b[3]  # noqa: E731
    found: dict[tuple, tuple] = {}
    level = boxes
    for _ in range(parts - 1):
        grown = {}
        for a in level:
            for b in boxes:
                if inside(a, b) or inside(b, a) or max(a[0] - b[2], b[0] - a[2]) > gx or max(a[1] - b[3], b[1] - a[3]) > gy:
                    continue
                joined = (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))
                key = tuple(np.round(np.array(joined) / 0.005).astype(int))  # the same box, to half a per cent
                if key not in found:
                    found[key] = grown[key] = joined
        level = list(grown.values())
    return list(found.values())


def nearness(box, picture, aspect: float) -> tuple[float, float]:
    """(share of the crop inside the picture's box grown for cleanness, share of the picture it holds)."""
    a = area(box)
    inside = area(meet(box, grow(picture, CLEAN_GROW, aspect))) / a if a else 0.0
    return inside, area(meet(box, picture)) / area(picture)


def kind_of(page: train.LabelledPage, i: int) -> str:
    """The candidate's kind, from its `from_*` measures (none set: one of the ink groupings)."""
    if i >= len(page.inputs):
        return "union"
    hot = [m.removeprefix("from_") for j, m in enumerate(MEASURES) if m.startswith("from_") and page.inputs[i, j] > 0.5]
    return hot[0] if hot else "other"


def oracle(pages: list[train.LabelledPage], margin: float, tighten: bool, union_gap: float | None = None,
           parts: int = 2):
    """Per source: [counted, proposed clean, candidates, pages], the misses, and which kinds were clean."""
    per_source: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0, 0])
    misses, clean_kinds = [], collections.Counter()
    for page in pages:
        boxes = picture_boxes(page, margin, tighten)
        if union_gap is not None:
            joined = unions(list(page.tight if tighten else page.boxes), page.aspect, union_gap, parts)
            boxes += [tuple(np.clip(grow(b, margin, page.aspect), 0, 1)) for b in joined]
        row = per_source[page.source]
        row[2] += len(boxes)
        row[3] += 1
        for n, picture in enumerate(p["box"] for p in page.labelled if p["counts"]):
            row[0] += 1
            clean = [i for i, b in enumerate(boxes) if is_clean(b, [picture], page.aspect)]
            if clean:
                row[1] += 1
                clean_kinds.update({kind_of(page, i) for i in clean})
                continue
            shares = [nearness(b, picture, page.aspect) for b in boxes]
            best = max(range(len(boxes)), key=lambda i: min(shares[i][0] / CLEAN_INSIDE, shares[i][1] / CLEAN_HOLDS),
                       default=None)
            misses.append((page, n, picture, best, shares[best] if best is not None else (0.0, 0.0)))
    return per_source, misses, clean_kinds


def render(page: train.LabelledPage, folder: pathlib.Path, out: pathlib.Path, margin: float, tighten: bool) -> None:
    """The page with its counted pictures (green) and, for each, the three candidates nearest to clean (red)."""
    import cv2

    image = cv2.imread(str(folder / "pages" / page.file))
    height, width = image.shape[:2]
    boxes = picture_boxes(page, margin, tighten)
    def draw(box, colour, thick):
        x0, y0, x1, y1 = (int(v * s) for v, s in zip(box, (width, height, width, height)))
        cv2.rectangle(image, (x0, y0), (x1, y1), colour, thick)
    for picture in (p["box"] for p in page.labelled if p["counts"]):
        shares = [nearness(b, picture, page.aspect) for b in boxes]
        order = sorted(range(len(boxes)), key=lambda i: -min(shares[i][0] / CLEAN_INSIDE, shares[i][1] / CLEAN_HOLDS))
        for i in order[:3]:
            draw(boxes[i], (0, 0, 255), 2)
        draw(picture, (0, 180, 0), 3)
    cv2.imwrite(str(out), image)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=pathlib.Path, nargs="?", default=ROOT.parent / "shared" / "realdata")
    parser.add_argument("--cache", type=pathlib.Path, default=ROOT / "bench" / "out" / "picture_candidates")
    parser.add_argument("--margin", type=float, default=0.01, help="share of the page's shorter side around a box")
    parser.add_argument("--as-found", action="store_true", help="the candidates' boxes as found, not tightened")
    parser.add_argument("--unions", type=float, help="add unions of candidates this near (a share of the shorter side)")
    parser.add_argument("--parts", type=int, default=2, choices=(2, 3), help="candidates a union joins, at most")
    parser.add_argument("--render", help="a page's file name: draw it with its pictures and nearest candidates")
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("/tmp/proposals.png"))
    args = parser.parse_args(argv)
    if not (args.folder / "pictures.jsonl").exists():
        sys.exit(f"no pictures.jsonl in {args.folder}: give a folder laid out like ../shared/realdata")
    pages = train.read_folder(args.folder, args.cache)
    tighten = not args.as_found
    if args.render:
        render(next(p for p in pages if p.file == args.render), args.folder, args.out, args.margin, tighten)
        print(f"wrote {args.out}")
        return
    per_source, misses, clean_kinds = oracle(pages, args.margin, tighten, args.unions, args.parts)
    print(f"boxes {'tightened' if tighten else 'as found'}, margin {args.margin:.1%} of the shorter side")
    print(f"{'source':46s} {'counted':>7s} {'clean':>5s} {'cand./page':>10s}")
    total = np.zeros(4, int)
    for source, row in sorted(per_source.items()):
        total += row
        print(f"{source[:46]:46s} {row[0]:7d} {row[1]:5d} {row[2] / row[3]:10.1f}")
    print(f"{'all':46s} {total[0]:7d} {total[1]:5d} {total[2] / total[3]:10.1f}")
    print("pictures proposed clean by each kind (a picture may count under several):",
          ", ".join(f"{k} {n}" for k, n in clean_kinds.most_common()))
    print("never proposed clean (the candidate nearest to clean: share of it inside, share of the picture held):")
    for page, n, picture, best, (inside, holds) in misses:
        kind = kind_of(page, best) if best is not None else "-"
        print(f"  {page.file[:40]:40s} #{n} inside {inside:4.2f} holds {holds:4.2f} ({kind})")


if __name__ == "__main__":
    main()
