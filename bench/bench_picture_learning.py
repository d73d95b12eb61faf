"""Learning from picture decisions, measured leave one source out on real pages.

    python bench/bench_picture_learning.py ../shared/realdata [--decisions 20]

For each source of FOLDER (laid out like ../shared/realdata): the verdict's head is trained and its cutoff
chosen on the other sources (curation.pictures.train, as its own figures are), and keeps the held-out
source's candidates as ingest would: those are the pictures a curator sees. Each kept picture is labelled
as the judge says (curation.pictures.judge): a clean crop of a counted picture is one the curator includes,
a wrong one they exclude (right-but-loose and ornaments teach nothing and are not counted). The curator
decides `--decisions` of them (two ways: least sure first, as Review offers them, and at random, five
draws), the model learns from those (curation.pictures.learned; its prior, the held-out head's scores and the
embedding-only regression trained on the other sources), and its
suggestions are compared with the labels of the pictures left. The reference in the same run is the head
alone on those same pictures; ratios are learned over head. Per source and pooled.

Candidates and embeddings are read through train.read_folder's cache (bench/out/picture_candidates).
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from curation.pictures import learned, train  # noqa: E402
from curation.pictures.candidates import MEASURES  # noqa: E402
from curation.pictures.verdict import select  # noqa: E402

DRAWS = 5


def kept_pictures(pages, head, cutoff: float):
    """The held-out pages' candidates kept at `cutoff`: embeddings, the head's scores, labels (1, 0, -1)."""
    vectors, scores, labels = [], [], []
    for page in pages:
        score = head.score(page.inputs)
        chosen = select(page.boxes, score, cutoff)
        vectors += [page.inputs[i, len(MEASURES):] for i in chosen]
        scores += [score[i] for i in chosen]
        labels += [int(page.labels[i]) for i in chosen]
    return np.array(vectors).reshape(-1, page.inputs.shape[1] - len(MEASURES)), np.array(scores), np.array(labels)


def agreement(vectors, scores, labels, prior, decided: np.ndarray, strength: float) -> tuple[int, int, int]:
    """(learned agrees, head agrees, of) on the labelled pictures not decided."""
    offsets = prior.logits(vectors, scores)
    rest = np.setdiff1d(np.arange(len(labels)), decided)
    truth = labels[rest] == 1
    correction, bias = learned.fit(vectors[decided], labels[decided] == 1, offsets[decided], prior, strength)
    z = (vectors[rest] - prior.mean) / prior.scale
    mine = offsets[rest] + z @ correction + bias >= 0
    return int(np.sum(mine == truth)), int(np.sum((offsets[rest] >= 0) == truth)), len(rest)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=pathlib.Path)
    parser.add_argument("--cache", type=pathlib.Path, default=pathlib.Path("bench/out/picture_candidates"))
    parser.add_argument("--decisions", type=int, default=20)
    parser.add_argument("--strengths", type=float, nargs="*", default=[],
                        help="also print pooled figures at these prior strengths (sensitivity, not a result)")
    args = parser.parse_args(argv)
    if not (args.folder / "pictures.jsonl").exists():
        sys.exit(f"no pictures.jsonl in {args.folder}: give a folder laid out like ../shared/realdata")
    started = time.process_time()
    pages = train.read_folder(args.folder, args.cache)
    strengths = [learned.PRIOR_STRENGTH, *args.strengths]
    sets = {"kept": "the pictures the head keeps (at its cutoff), as ingest stores them",
            "all": "every candidate (best of each overlapping group, no cutoff): what a curator would see with "
                   "the cutoff at 0"}
    pooled = {(name, s): {"least sure": np.zeros(3), "random": np.zeros(3)} for name in sets for s in strengths}
    print(f"{len(pages)} pages, {len(train.sources(pages))} sources; up to {args.decisions} decisions per source "
          f"(at most half its labelled pictures); prior strength {learned.PRIOR_STRENGTH:g}")
    lines = {name: [] for name in sets}
    for source in train.sources(pages):
        others = [p for p in pages if p.source != source]
        cutoff = train.best_cutoff(others, train.held_out_scores(others))
        head = train.fit(others, cutoff)
        prior = train.fit_prior(others, cutoff)
        held_out = [p for p in pages if p.source == source]
        for name, at in (("kept", cutoff), ("all", 0.0)):
            vectors, scores, labels = kept_pictures(held_out, head, at)
            labelled = np.flatnonzero(labels >= 0)
            kept = len(labels)
            vectors, scores, labels = vectors[labelled], scores[labelled], labels[labelled]
            count = min(args.decisions, len(labels) // 2)
            line = (f"  {source[:40]:40s} {kept:4d} {len(labels):5d} {int((labels == 1).sum()):4d} "
                    f"{int((labels == 0).sum()):4d} {count:4d}  ")
            if count < 1:
                lines[name].append(line + " too few labelled pictures to measure")
                continue
            unsure = np.argsort(np.abs(prior.logits(vectors, scores)), kind="stable")[:count]
            draws = [np.random.default_rng(seed).choice(len(labels), count, replace=False) for seed in range(DRAWS)]
            for strength in strengths:
                first = np.array(agreement(vectors, scores, labels, prior, unsure, strength))
                drawn = np.sum([agreement(vectors, scores, labels, prior, d, strength) for d in draws], axis=0)
                pooled[(name, strength)]["least sure"] += first
                pooled[(name, strength)]["random"] += drawn
                if strength == learned.PRIOR_STRENGTH:
                    lines[name].append(line + f"  {_pair(first)}      {_pair(drawn)}")
        print(f"  [{source}] done", file=sys.stderr)
    for name, words in sets.items():
        print(f"\n{name}: {words}")
        print(f"  {'source':40s} {'seen':>4s} {'label':>5s} {'pos':>4s} {'neg':>4s} {'dec':>4s}   "
              "least sure first: learned / head      random (5 draws): learned / head")
        print("\n".join(lines[name]))
        for strength in strengths:
            tag = "pooled" if strength == learned.PRIOR_STRENGTH else f"pooled, strength {strength:g} (sensitivity)"
            first, drawn = pooled[(name, strength)]["least sure"], pooled[(name, strength)]["random"]
            print(f"  {tag:64s}  {_pair(first)}      {_pair(drawn)}")
            for what, t in (("least sure first", first), ("random", drawn)):
                if t[2]:
                    print(f"    {what}: learned {t[0] / t[2]:.3f}, head alone {t[1] / t[2]:.3f}, "
                          f"ratio learned/head {t[0] / max(t[1], 1):.3f}")
    print(f"CPU time {time.process_time() - started:.0f} s (process time, machine loaded by others)")


def _pair(t) -> str:
    agreed, head, of = (int(v) for v in t)
    return f"{agreed / of:5.3f} / {head / of:5.3f} of {of:3d}" if of else "   -- no pictures left --  "


if __name__ == "__main__":
    main()
