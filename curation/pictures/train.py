"""The verdict's recipe: train the head on labelled real pages (and generated ones) and measure it leave one
source out.

    python -m curation.pictures.train ../shared/realdata            # figures, then writes the head
    python -m curation.pictures.train ../shared/realdata --no-save  # figures only

FOLDER is laid out like ../shared/realdata: `labels.jsonl` (each page's `file`, `dpi` and `source`, the
repository it came from), `pictures.jsonl` (every picture boxed by hand, `counts` for the ones a
curator wants) and the page images under `pages/`. Each page is brought to 144 dpi gray, as ingest
measures it, and its candidates are proposed and embedded (cached under --cache: the embedding is the
slow part). A candidate is a positive when it is a clean crop of a counted picture, a negative when it
is wrong (see curation.pictures.judge); candidates that are right but loose, or lie on an ornament or a
stock cut, teach nothing either way and are left out. Beside them, --generated pages of our own generator
(curation.sources.synthetic), whose engravings it boxes itself, are one more source: the head learns the
kinds of page the generated archive holds, and is measured on them the same way (apart from the real
sources' pooled figures).

Every figure is leave one source out: for each source, the head is trained on the other sources, its
cutoff is chosen on them (each of their pages scored by a head that did not see its own source), and
the pictures it keeps on the held-out source are judged. The shipped head is then trained on every
source, with the cutoff chosen the same way over all of them; its figures are the held-out ones above,
written to verdict.json beside the weights. Training is deterministic: the same pages give the same
head, to the bit.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pathlib
import sys
from dataclasses import dataclass

import cv2
import numpy as np

from ..scoring.features import REFERENCE_DPI
from ..scoring.pictures import DEFAULT_PICTURE_AREA_MIN
from .candidates import MEASURES
from .judge import Tally, grow, judge
from .prior import PRIOR_FILE, Prior
from .verdict import HEAD_FILE, RECIPE_FILE, Head, page_candidates, select

# Small trees, slowly learned, each leaf of at least 20 candidates: a few dozen positives per source. No early
# stopping (it would hold out candidates at random, not by source) and a fixed seed: the same head every run.
TREES = dict(max_iter=200, learning_rate=0.05, max_leaf_nodes=15, min_samples_leaf=20, l2_regularization=1.0,
             class_weight="balanced", early_stopping=False, random_state=0)
PRIOR_REGULARISATION = 0.01  # the prior's logistic regression's C: 1280 inputs, a few dozen positives per source
CUTOFFS = np.round(np.arange(0.05, 1.0, 0.05), 2)
GENERATED = "generated"  # the source name of the generated pages the head also learns from
GENERATED_KINDS = ("engraving", "text", "mixed", "ornament", "faded_engraving")
GENERATED_SEED = 90_000
GENERATED_PAGES = 0  # learning from 60 made the real sources worse, leave one source out (docs/learned-pictures.md)
# How a kept candidate's box becomes the picture's (curation.pictures.boxes): tightened to its non-text ink or
# not, and the margin around it. Chosen like the cutoff, leave one source out; the first of equals is kept.
BOX_STEPS = tuple((tighten, margin) for tighten in (False, True) for margin in (0.0, 0.005, 0.01))


@dataclass
class LabelledPage:
    file: str
    source: str
    aspect: float  # width over height
    labelled: list[dict]  # the hand-drawn boxes
    boxes: list[tuple[float, float, float, float]]  # candidates' boxes, fractions of the page
    tight: list[tuple[float, float, float, float]]  # the same tightened to their non-text ink
    inputs: np.ndarray  # the head's inputs, a row per candidate
    labels: np.ndarray  # 1 a clean picture, 0 wrong, -1 left out
    illustrated: bool = False  # the page's own label: it holds a picture a curator wants


def read_folder(folder: pathlib.Path, cache: pathlib.Path | None = None, progress=None) -> list[LabelledPage]:
    """Every labelled page of `folder` with its candidates, the head's inputs and their labels."""
    labels = [json.loads(line) for line in (folder / "labels.jsonl").read_text().splitlines() if line.strip()]
    boxed = {json.loads(line)["file"]: json.loads(line)["pictures"]
             for line in (folder / "pictures.jsonl").read_text().splitlines() if line.strip()}
    pages = []
    for label in labels:
        if label["file"] not in boxed:
            continue
        pages.append(_labelled_page(folder, label, boxed[label["file"]], cache))
        if progress:
            progress(len(pages), len(labels))
    return pages


def _labelled_page(folder: pathlib.Path, label: dict, labelled: list[dict], cache: pathlib.Path | None) -> LabelledPage:
    image_path = folder / "pages" / label["file"]
    image = image_path.read_bytes()
    boxes, tight, inputs, aspect = _candidates(image, lambda: at_reference(cv2.imread(str(image_path), cv2.IMREAD_GRAYSCALE),
                                                                    label["dpi"]), cache)
    return _labelled(label["file"], label["source"].split("@")[0], aspect, labelled, boxes, tight, inputs,
                     bool(label["has_illustration"]))


def _candidates(key: bytes, gray, cache: pathlib.Path | None):
    """(boxes as fractions of the page, the same tightened, the head's inputs, width over height) of the page
    `gray()` reads, kept in `cache` under `key` (the image's bytes) and the candidates' code."""
    cached = cache / f"{hashlib.sha256(key + _code_version()).hexdigest()[:20]}.npz" if cache else None
    if cached and cached.exists():
        with np.load(cached) as data:
            return ([tuple(b) for b in data["boxes"]], [tuple(b) for b in data["tight"]], data["inputs"],
                    float(data["aspect"]))
    gray = gray()
    height, width = gray.shape
    found = page_candidates(gray, embedded=True)  # kept to compare heads with; the verdict reads the measures
    def fractions(tighten: bool):
        return [(x0 / width, y0 / height, x1 / width, y1 / height)
                for x0, y0, x1, y1 in (found.picture_box(i, gray.shape, tighten, 0.0) for i in range(len(found.candidates)))]

    boxes, tight = fractions(False), fractions(True)
    if cached:
        cache.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(cached, boxes=np.array(boxes).reshape(-1, 4), tight=np.array(tight).reshape(-1, 4),
                            inputs=found.inputs, aspect=width / height)
    return boxes, tight, found.inputs, width / height


def _labelled(file: str, source: str, aspect: float, labelled: list[dict], boxes, tight, inputs, illustrated: bool):
    result = judge(boxes, labelled, aspect)
    classes = np.array([1 if clean else 0 if verdict == "wrong" else -1
                        for verdict, clean in zip(result["verdicts"], result["clean"])], np.int8)
    return LabelledPage(file, source, aspect, labelled, boxes, tight, inputs, classes, illustrated)


def generated_pages(count: int, cache: pathlib.Path | None = None, progress=None) -> list[LabelledPage]:
    """`count` generated periodical pages (curation.sources.synthetic: engravings, faded ones, plates beside
    text, text with ornaments) at the reference resolution, each engraving boxed by the generator: one more
    source, so the head also knows the pages the generated archive (bench/quality.py) is made of. Their seeds
    are apart from that archive's."""
    from ..sources.synthetic import PageSpec, page_image_and_pictures

    pages = []
    for n in range(count):
        spec = PageSpec(kind=GENERATED_KINDS[n % len(GENERATED_KINDS)], seed=GENERATED_SEED + n, dpi=REFERENCE_DPI,
                        border=n % 3 == 0, bleed=n % 4 == 1)
        rgb, pictures = page_image_and_pictures(spec)
        height, width = rgb.shape[:2]
        labelled = [{"box": (x0 / width, y0 / height, x1 / width, y1 / height), "counts": True}
                    for x0, y0, x1, y1 in pictures]
        boxes, tight, inputs, aspect = _candidates(repr(spec).encode(), lambda: cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY),
                                                   cache)
        pages.append(_labelled(f"generated-{n:03d}", GENERATED, aspect, labelled, boxes, tight, inputs,
                               spec.is_illustration))
        if progress:
            progress(n + 1, count)
    return pages


def _code_version() -> bytes:
    """What the cache depends on besides the image: the candidates' code. (The embedding's is left out: the
    verdict does not read it, and the prior's regression is not thrown off by a change in the last digits.)"""
    here = pathlib.Path(__file__).parent
    parts = [here / "candidates.py", here / "text.py", here / "boxes.py",
             here.parent / "scoring" / "pictures.py", here.parent / "scoring" / "features.py"]
    return b"".join(p.read_bytes() for p in parts)


def at_reference(gray: np.ndarray, dpi: float) -> np.ndarray:
    """A page image at `dpi` brought to 144 dpi, where ingest analyses pages."""
    scale = REFERENCE_DPI / dpi
    size = (max(1, round(gray.shape[1] * scale)), max(1, round(gray.shape[0] * scale)))
    return cv2.resize(gray, size, interpolation=cv2.INTER_AREA if scale < 1 else cv2.INTER_CUBIC)


def fit(pages: list[LabelledPage], cutoff: float = 0.5, box_steps: tuple[bool, float] = (False, 0.0)) -> Head:
    """A head trained on the labelled candidates of `pages` (their measures; a cached embedding is not read)."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    inputs = np.concatenate([p.inputs[p.labels >= 0, :len(MEASURES)] for p in pages])
    labels = np.concatenate([p.labels[p.labels >= 0] for p in pages])
    model = HistGradientBoostingClassifier(**TREES)
    model.fit(inputs, labels)
    return Head.from_trees(model, cutoff, *box_steps)


def fit_prior(pages: list[LabelledPage], verdict_cutoff: float) -> Prior:
    """The picture model's prior (curation.decisions.picture_model): a logistic regression on the candidates'
    embeddings alone, its cutoff chosen as the verdict's is, leave one source out."""
    def regression(train_pages):
        from sklearn.linear_model import LogisticRegression

        rows = np.concatenate([p.inputs[p.labels >= 0, len(MEASURES):] for p in train_pages])
        labels = np.concatenate([p.labels[p.labels >= 0] for p in train_pages])
        mean, scale = rows.mean(axis=0), rows.std(axis=0)
        scale[scale < 1e-9] = 1.0
        model = LogisticRegression(C=PRIOR_REGULARISATION, class_weight="balanced", max_iter=5000)
        model.fit((rows - mean) / scale, labels)
        return mean, scale, model.coef_[0].copy(), float(model.intercept_[0])

    def scores(fitted, page):
        mean, scale, coef, intercept = fitted
        return 1 / (1 + np.exp(-np.clip(((page.inputs[:, len(MEASURES):] - mean) / scale) @ coef + intercept, -50, 50)))

    held_out: list[np.ndarray] = [np.zeros(0)] * len(pages)
    for source in sources(pages):
        fitted = regression([p for p in pages if p.source != source])
        for i, page in enumerate(pages):
            if page.source == source:
                held_out[i] = scores(fitted, page)
    return Prior.of_regression(*regression(pages), best_cutoff(pages, held_out), verdict_cutoff)


def sources(pages: list[LabelledPage]) -> list[str]:
    return sorted({p.source for p in pages})


def held_out_scores(pages: list[LabelledPage]) -> list[np.ndarray]:
    """Each page's candidate scores from a head trained without the page's source."""
    scores: list[np.ndarray] = [np.zeros(0)] * len(pages)
    for source in sources(pages):
        head = fit([p for p in pages if p.source != source])
        for i, page in enumerate(pages):
            if page.source == source:
                scores[i] = head.score(page.inputs)
    return scores


def tally(pages: list[LabelledPage], scores: list[np.ndarray], cutoff: float,
          box_steps: tuple[bool, float] = (False, 0.0)) -> Tally:
    """The kept pictures judged (their boxes made as `box_steps` says: tightened or not, the margin), and each
    page kept as the picture rule keeps it at its default size."""
    total = Tally()
    tighten, margin = box_steps
    for page, score in zip(pages, scores):
        chosen = select(page.boxes, score, cutoff)
        kept = [(page.tight if tighten else page.boxes)[i] for i in chosen]
        kept = [tuple(np.clip(grow(box, margin, page.aspect), 0, 1)) for box in kept] if margin else kept
        total.add(judge(kept, page.labelled, page.aspect))
        areas = np.exp(page.inputs[chosen, MEASURES.index("log_area")]) - 1e-3 if chosen else np.zeros(0)
        total.add_page(bool((areas >= DEFAULT_PICTURE_AREA_MIN).any()), page.illustrated)
    return total


def best_cutoff(pages: list[LabelledPage], scores: list[np.ndarray]) -> float:
    """The cutoff with the best balance of picture precision and recall (F1) on these pages."""
    def f1(cutoff: float) -> float:
        t = tally(pages, scores, cutoff)
        p, r = np.nan_to_num(t.precision), np.nan_to_num(t.recall)
        return 2 * p * r / (p + r) if p + r else 0.0

    return float(max(CUTOFFS, key=f1))


def best_box_steps(pages: list[LabelledPage], scores: list[np.ndarray], cutoff: float) -> tuple[bool, float]:
    """The way of making a kept candidate's box (BOX_STEPS) that makes the most clean crops on these pages."""
    return max(BOX_STEPS, key=lambda steps: tally(pages, scores, cutoff, steps).clean)


def leave_one_source_out(pages: list[LabelledPage], progress=None) -> dict[str, tuple[Tally, float, tuple]]:
    """For each source: (the pictures kept on it by a head trained and tuned on the other sources, the
    cutoff chosen there, and how the boxes are made, chosen there too: `best_box_steps`)."""
    results = {}
    for n, source in enumerate(sources(pages), 1):
        others = [p for p in pages if p.source != source]
        scores = held_out_scores(others)
        cutoff = best_cutoff(others, scores)
        head = fit(others, cutoff, best_box_steps(others, scores, cutoff))
        held_out = [p for p in pages if p.source == source]
        steps = (head.tighten, head.margin)
        results[source] = (tally(held_out, [head.score(p.inputs) for p in held_out], cutoff, steps), cutoff, steps)
        if progress:
            progress(n, len(sources(pages)), source)
    return results


def table(results: dict[str, tuple[Tally, float, tuple]]) -> tuple[list[str], Tally]:
    """A line per source, then the real sources pooled (the generated pages are ours: apart)."""
    lines, pooled = [], Tally()
    for source, (t, cutoff, (tighten, margin)) in results.items():
        if source != GENERATED:
            pooled += t
        boxes = f"{'tight' if tighten else 'as found'} +{margin:.1%}"
        lines.append(f"  {source[:44]:44s} cutoff {cutoff:4.2f} {boxes:15s} {t.line()}")
    lines.append(f"  {'pooled, real sources':44s} {'':27s} {pooled.line()}")
    return lines, pooled


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m curation.pictures.train", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=pathlib.Path)
    parser.add_argument("--cache", type=pathlib.Path, default=pathlib.Path("bench/out/picture_candidates"),
                        help="where candidates and embeddings of each page are kept between runs")
    parser.add_argument("--generated", type=int, default=GENERATED_PAGES,
                        help="generated pages learned from as one more source (0: none)")
    parser.add_argument("--no-save", action="store_true", help="print the figures, write no head")
    args = parser.parse_args(argv)
    if not (args.folder / "pictures.jsonl").exists():
        sys.exit(f"no pictures.jsonl in {args.folder}: give a folder laid out like ../shared/realdata")
    from tqdm import tqdm

    with tqdm(desc="pages", unit="page", file=sys.stderr) as bar:
        def advance(done, total):
            bar.total = total
            bar.update(done - bar.n)
        pages = read_folder(args.folder, args.cache, advance)
        bar.reset()
        pages += generated_pages(args.generated, args.cache, advance)
    positives = sum(int((p.labels == 1).sum()) for p in pages)
    negatives = sum(int((p.labels == 0).sum()) for p in pages)
    print(f"{len(pages)} pages from {len(sources(pages))} sources; {sum(len(p.boxes) for p in pages)} candidates, "
          f"{positives} clean pictures, {negatives} wrong")
    results = leave_one_source_out(pages, progress=lambda n, total, s: print(f"  [{n}/{total}] {s}", file=sys.stderr))
    lines, pooled = table(results)
    print("pictures kept, leave one source out (trained and tuned on the other sources):")
    print("\n".join(lines))
    if args.no_save:
        return
    scores = held_out_scores(pages)
    cutoff = best_cutoff(pages, scores)
    head = fit(pages, cutoff, best_box_steps(pages, scores, cutoff))
    head.save(HEAD_FILE)
    prior = fit_prior(pages, cutoff)
    prior.save(PRIOR_FILE)
    RECIPE_FILE.write_text(json.dumps(_recipe(args.folder, pages, results, pooled, head, prior), indent=1) + "\n")
    print(f"wrote {HEAD_FILE} (cutoff {cutoff:.2f}), {PRIOR_FILE} (cutoff {prior.cutoff:.2f}) and {RECIPE_FILE}")


def _recipe(folder, pages, results, pooled: Tally, head: Head, prior: Prior) -> dict:
    cutoff = head.cutoff
    def figures(t: Tally) -> dict:
        return {"precision": round(t.precision, 3), "recall": round(t.recall, 3), "clean": round(t.clean_share, 3),
                "right": t.right, "wrong": t.wrong, "neither": t.neither, "found": t.found, "counted": t.counted,
                "page_precision": round(t.page_precision, 3), "page_recall": round(t.page_recall, 3)}

    return {
        "trained_on": {"folder": folder.name, "pages": len(pages), "sources": sources(pages),
                       "generated": {"pages": sum(p.source == GENERATED for p in pages), "seed": GENERATED_SEED,
                                     "kinds": GENERATED_KINDS, "by": "curation.sources.synthetic"},
                       "files": sorted(p.file for p in pages),
                       "clean_pictures": sum(int((p.labels == 1).sum()) for p in pages),
                       "wrong_candidates": sum(int((p.labels == 0).sum()) for p in pages)},
        "model": {"inputs": "candidate measures (curation.pictures.candidates.MEASURES)",
                  "head": "scikit-learn HistGradientBoostingClassifier, kept as arrays (verdict.Head)",
                  "parameters": {k: v for k, v in TREES.items()},
                  "cutoff": cutoff, "cutoff_chosen_by": "F1 of picture precision and recall, leave one source out",
                  "boxes": {"tighten": head.tighten, "margin": head.margin,
                            "chosen_by": "the most clean crops, leave one source out (curation.pictures.boxes)"}},
        "prior": {"file": PRIOR_FILE.name, "for": "the picture model learned from a manifest's decisions "
                  "(curation.decisions.picture_model)", "inputs": "EfficientNet-Lite0 ImageNet embedding of the crop (1280)",
                  "head": "logistic regression, standardised inputs, balanced classes", "C": PRIOR_REGULARISATION,
                  "cutoff": round(prior.cutoff, 2), "cutoff_chosen_by": "as the verdict's"},
        "leave_one_source_out": {s: dict(figures(t), cutoff=c, tighten=b[0], margin=b[1])
                                 for s, (t, c, b) in results.items()} | {
            "pooled, real sources": figures(pooled)},
        "command": "python -m curation.pictures.train ../shared/realdata",
    }


if __name__ == "__main__":
    main()
