"""The picture judge's recipe: learn which of the finder's boxes are pictures, measured leave one source out.

    python -m curation.pictures.picture_judge_train ../shared/realdata ../shared/boxed             # figures, the judge
    python -m curation.pictures.picture_judge_train ../shared/realdata ../shared/boxed --seeds 37,38,39 --no-save

For each of the --seeds, the finder's recipe (curation.pictures.finder_train, its features and checkpoints kept under
--cache) trains the heads of every fold, and each page of the measure (the first FOLDER, laid out like
../shared/realdata) gets its cells from heads that learned from none of its source's pages; those cells are kept
beside the recipe's cache. Then, for each source of the measure:

1. the finder's settings are chosen on the other sources' cells (as the finder's recipe does), and every picture of
   the export's size on every page is found with them;
2. each box is judged against the hand-drawn ones (curation.pictures.judge): a right box is a picture, a wrong one
   (handwriting, a seal, a masthead, bare paper) is not; a box on a picture that does not count is left out;
3. the judge's head is fitted on the other sources' boxes, and its cutoff on their boxes judged by heads fitted
   without their own source (the best mean of picture precision, recall and clean share, as the settings are chosen);
4. the held-out source's boxes the judge passes are kept, and judged (the judge alone decides: the cells'
   certainty, which the finder alone counts a picture by, is one of its measures).

Per source and pooled, beside the finder alone on the same cells; with several seeds, each seed's figures and their
mean. The shipped head is fitted on every source's boxes (the shipped finder settings, the last seed's cells), its
cutoff from every source's boxes judged leave one source out; picture_judge.json records it with the figures.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import pickle
import sys
import time
from dataclasses import dataclass, replace

import numpy as np

from ..scoring.features import REFERENCE_DPI
from ..scoring.pictures import DEFAULT_PICTURE_AREA_MIN
from . import finder
from . import finder_train as recipe
from .judge import Tally, judge
from .picture_judge import HEAD_FILE, MEASURES, Head, fit, measures

CUTOFFS = tuple(round(c, 2) for c in np.arange(0.05, 0.96, 0.05))
C = 1.0  # the logistic head's inverse regularisation: few boxes a fold, so a firm prior


@dataclass
class Box:
    """One box the finder counts on a measured page with one fold's settings, and what it is."""

    page: int  # its page's index in the measure
    box: tuple[float, float, float, float]  # fractions of the page
    score: float
    measured: np.ndarray
    verdict: str  # right, wrong or neither (judge)


def boxes_of(held: list[recipe.HeldOut], settings: finder.Settings) -> list[Box]:
    """Every picture of the export's size the finder makes with `settings` on each held-out page, measured."""
    found = []
    for index, seen in enumerate(held):
        h, w = seen.gray.shape
        pictures = [p for p in seen.pictures(settings) if p.area >= DEFAULT_PICTURE_AREA_MIN]
        if not pictures:
            continue
        fractions = [(p.box[0] / w, p.box[1] / h, p.box[2] / w, p.box[3] / h) for p in pictures]
        verdicts = judge(fractions, seen.page.labelled, seen.page.aspect)["verdicts"]
        for p, box, verdict in zip(pictures, fractions, verdicts):
            found.append(Box(index, box, p.score, measures(seen.gray, seen.cells, p.box, REFERENCE_DPI), verdict))
    return found


def fitted(boxes: list[Box], cutoff: float = 0.5) -> Head | None:
    """The logistic head over the right (pictures) and wrong (not) boxes; None without both."""
    taught = [b for b in boxes if b.verdict != "neither"]
    if not taught:
        return None
    return fit(np.array([b.measured for b in taught]), np.array([b.verdict == "right" for b in taught]), cutoff, C)


def tally(held: list[recipe.HeldOut], pages: list[int], boxes: list[Box], keep) -> Tally:
    """The boxes `keep` passes (each counted by the finder: at or above the settings' score), judged on `pages`."""
    by_page = {}
    for b in boxes:
        if keep(b):
            by_page.setdefault(b.page, []).append(b.box)
    total = Tally()
    for index in pages:
        page = held[index].page
        kept = by_page.get(index, [])
        total.add(judge(kept, page.labelled, page.aspect))
        total.add_page(bool(kept), page.illustrated)
    return total


def merit(t: Tally) -> float:
    return float(np.mean([np.nan_to_num(v) for v in (t.precision, t.recall, t.clean_share)]))


def out_of_fold(held: list[recipe.HeldOut], boxes: list[Box], sources: list[str]) -> dict[int, float]:
    """Each box's probability from a head fitted on the boxes of the other `sources` (by id of the box)."""
    probability = {}
    for source in sources:
        inside = [b for b in boxes if held[b.page].page.source == source]
        head = fitted([b for b in boxes if held[b.page].page.source in sources and held[b.page].page.source != source])
        for b in inside:
            probability[id(b)] = 1.0 if head is None else float(head.probability(b.measured)[0])
    return probability


def chosen_cutoff(held: list[recipe.HeldOut], boxes: list[Box], sources: list[str], score_cutoff: float = 0.0) -> float:
    """The judge's cutoff with the best merit on `sources`' boxes (those the finder scores at least `score_cutoff`),
    each judged by a head fitted without its source."""
    probability = out_of_fold(held, boxes, sources)
    pages = [i for i, seen in enumerate(held) if seen.page.source in sources]
    inside = [b for b in boxes if held[b.page].page.source in sources]
    return max(CUTOFFS, key=lambda c: merit(tally(held, pages, inside,
                                                  lambda b: b.score >= score_cutoff and probability[id(b)] >= c)))


def export_sized_recall(held: list[recipe.HeldOut], pages: list[int], boxes: list[Box], keep) -> tuple[int, int]:
    """Found and counted over the counted pictures of the export's size (DEFAULT_PICTURE_AREA_MIN or more)."""
    kept = {}
    for b in boxes:
        if keep(b):
            kept.setdefault(b.page, []).append(b.box)
    found = counted = 0
    for index in pages:
        seen = held[index]
        h, w = seen.gray.shape
        for picture in seen.page.labelled:
            x0, y0, x1, y1 = picture["box"]
            if picture["counts"] and (x1 - x0) * w * (y1 - y0) * h / REFERENCE_DPI ** 2 >= DEFAULT_PICTURE_AREA_MIN:
                counted += 1
                found += judge(kept.get(index, []), [picture], seen.page.aspect)["found"][0]
    return found, counted


def leave_one_source_out(held: list[recipe.HeldOut], say) -> dict:
    """For each source: the finder alone and with the judge, every choice made on the other sources."""
    sources = sorted({seen.page.source for seen in held})
    settings_of = {source: chosen for source, (_, chosen) in recipe.leave_one_source_out(held).items()}
    boxes_by_settings = {}
    results = {}
    for source in sources:
        started = time.perf_counter()
        settings = settings_of[source]
        making = replace(settings, score_cutoff=0.0)
        if making not in boxes_by_settings:
            boxes_by_settings[making] = boxes_of(held, making)
        boxes = boxes_by_settings[making]
        others = [s for s in sources if s != source]
        cutoff = chosen_cutoff(held, boxes, others)
        head = fitted([b for b in boxes if held[b.page].page.source in others])
        pages = [i for i, seen in enumerate(held) if seen.page.source == source]
        inside = [b for b in boxes if b.page in set(pages)]
        # The finder alone counts a picture its cells are sure of; with the judge, the judge alone decides (the
        # cells' certainty is one of its measures), as ingest stores it.
        counted = lambda b: b.score >= settings.score_cutoff  # noqa: E731
        judged_in = lambda b: head is None or head.probability(b.measured)[0] >= cutoff  # noqa: E731
        results[source] = {"alone": tally(held, pages, inside, counted),
                           "judged": tally(held, pages, inside, judged_in),
                           "alone_export": export_sized_recall(held, pages, inside, counted),
                           "judged_export": export_sized_recall(held, pages, inside, judged_in),
                           "cutoff": cutoff, "settings": settings}
        say(f"{source}: judge cutoff {cutoff:g}, {time.perf_counter() - started:.0f} s")
    return results


def shipped(held: list[recipe.HeldOut]) -> tuple[Head, int]:
    """The head fitted on every source's boxes found with the shipped settings, its cutoff chosen on every source's
    boxes judged leave one source out; and how many boxes it learned from."""
    settings = finder.shipped_settings()
    boxes = boxes_of(held, replace(settings, score_cutoff=0.0))
    sources = sorted({seen.page.source for seen in held})
    cutoff = chosen_cutoff(held, boxes, sources)
    head = fitted(boxes, cutoff)
    return head, sum(b.verdict != "neither" for b in boxes)


def figures(t: Tally, export: tuple[int, int]) -> dict:
    found, counted = export
    return {**recipe.figures(t), "recall_export_sized": round(found / counted, 3) if counted else None,
            "found_export_sized": found, "counted_export_sized": counted}


def held_out_of(folders: list[pathlib.Path], seed: int, cache: pathlib.Path, say) -> list[recipe.HeldOut]:
    """The measure's pages with their cells from the heads of the fold that left their source out (seed `seed`):
    trained by the finder's recipe, or read from where an earlier run kept them."""
    composed = max(within for within, _ in recipe.HEADS)
    key = recipe.data_key(folders, composed, seed)
    kept = cache / key / "held_out_cells.pkl"
    measure = recipe.measured_pages(folders[0])
    if kept.exists():
        with open(kept, "rb") as f:
            cells = pickle.load(f)
        return [recipe.HeldOut(page, recipe.at_reference(page), np.asarray(cells[page.file.name])) for page in measure]
    runs = recipe.runs_of(folders, (seed,), composed, cache, recipe.material(folders), say)
    held = recipe.held_out_cells(runs, measure, recipe.HEADS, composed, say)
    with open(kept, "wb") as f:
        pickle.dump({seen.page.file.name: seen.cells for seen in held}, f)
    return held


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m curation.pictures.picture_judge_train",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", type=pathlib.Path, nargs="+", metavar="FOLDER",
                        help="the measure (laid out like ../shared/realdata), then the finder's other material")
    parser.add_argument("--seeds", type=recipe.seeds_option, default=recipe.SEEDS, metavar="SEED,...",
                        help="the finder's recipe's seeds: each trains its folds' heads (default "
                             f"{','.join(map(str, recipe.SEEDS))}); the figures are given for each and on average")
    parser.add_argument("--cache", type=pathlib.Path, default=recipe.DEFAULT_CACHE,
                        help="the finder's recipe's features and checkpoints, and the held-out cells")
    parser.add_argument("--no-save", action="store_true", help="figures only; the shipped judge is left as it is")
    args = parser.parse_args(argv)

    def say(message: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    record = {"folders": [str(f) for f in args.folders], "measures": list(MEASURES), "C": C, "seeds": {}}
    for seed in args.seeds:
        held = held_out_of(args.folders, seed, args.cache, say)
        results = leave_one_source_out(held, say)
        figures_of_seed = {"per_source": {}}
        pooled = {"alone": Tally(), "judged": Tally()}
        export = {"alone": [0, 0], "judged": [0, 0]}
        print(f"seed {seed}: the finder alone, then with its judge, leave one source out")
        for source, result in results.items():
            for way in ("alone", "judged"):
                pooled[way] += result[way]
                export[way] = [a + b for a, b in zip(export[way], result[f"{way}_export"])]
            figures_of_seed["per_source"][source] = {way: figures(result[way], result[f"{way}_export"])
                                          for way in ("alone", "judged")}
            figures_of_seed["per_source"][source]["cutoff"] = result["cutoff"]
            print(f"  {source[:46]:46s} alone  {result['alone'].line()}\n  {'':46s} judged {result['judged'].line()}")
        for way in ("alone", "judged"):
            figures_of_seed[way] = figures(pooled[way], tuple(export[way]))
            figures_of_seed[f"{way}_mean_over_sources"] = {
                name: round(float(np.nanmean([getattr(r[way], name) for r in results.values()])), 3)
                for name in ("precision", "recall", "clean_share")}
            print(f"  {'pooled, ' + way:46s} {pooled[way].line()}; export-sized recall "
                  f"{export[way][0]} of {export[way][1]}")
        record["seeds"][str(seed)] = figures_of_seed
    if len(args.seeds) > 1:
        record["on_average"] = {way: recipe.on_average([s[way] for s in record["seeds"].values()])
                                for way in ("alone", "judged")}
        for way in ("alone", "judged"):
            print(f"  one seed on average, {way}: {recipe.average_text(record['on_average'][way])}")
    if not args.no_save:
        head, taught = shipped(held)
        record["learned_from"] = f"{taught} boxes of seed {args.seeds[-1]}'s cells (right or wrong; neither left out)"
        HEAD_FILE.write_text(json.dumps({"head": head.as_dict(), "record": record}, indent=1) + "\n", encoding="utf-8")
        say(f"wrote {HEAD_FILE.name} (cutoff {head.cutoff:g})")


if __name__ == "__main__":
    main()
