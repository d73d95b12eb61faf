"""Learning from picture decisions, measured leave one source out on real pages.

    python bench/bench_picture_learning.py ../shared/realdata [--decisions 20] [--strengths 1 3 10 30 100]

For each source of FOLDER (laid out like ../shared/realdata): the verdict's head is trained and its cutoff
chosen on the other sources (curation.pictures.train, as its own figures are), and keeps the held-out
source's candidates as ingest would: those are the pictures a curator sees. Each kept picture is labelled
as the judge says (curation.pictures.judge): a clean crop of a counted picture is one the curator includes,
a wrong one they exclude (right-but-loose and ornaments teach nothing and are not counted). The curator
decides `--decisions` of them (two ways: least sure first, as Review offers them, and at random, five
draws), the model learns from those (curation.decisions.picture_model; its prior, the held-out head's scores and the
embedding-only regression trained on the other sources), and its
suggestions are compared with the labels of the pictures left. The reference in the same run is the head
alone on those same pictures; ratios are learned over head. Per source and pooled.

How hard the model is pulled to the prior (its strength) is chosen leave one source out too: for each
held-out source, the same simulation is run on each of the other sources in turn (their pictures kept and
scored by heads that did not see them, the ones that chose the cutoff), and the strength of `--strengths`
agreeing best there, pooled, is the one measured on the held-out source. Where every pooled figure ties, the
shipped strength (picture_model.PRIOR_STRENGTH) is kept. The strength chosen the same way on every source is printed
last: the one to ship. A prior's regression reads only its mean and scale here: every picture a curator sees
was scored by the head, whose score is its prior (curation.pictures.prior.Prior.logits).

Candidates and embeddings are read through train.read_folder's cache (bench/out/picture_candidates).
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from curation.decisions import picture_model  # noqa: E402
from curation.pictures import train  # noqa: E402
from curation.pictures.prior import Prior  # noqa: E402
from curation.pictures.candidates import MEASURES  # noqa: E402
from curation.pictures.verdict import select  # noqa: E402

DRAWS = 5
SETS = {"kept": "the pictures the head keeps (at its cutoff), as ingest stores them",
        "all": "every candidate (best of each overlapping group, no cutoff): what a curator would see with "
               "the cutoff at 0"}


def kept_pictures(pages, scores, cutoff: float):
    """The pages' candidates kept at `cutoff` under `scores` (one array a page): embeddings, scores, labels."""
    vectors, kept_scores, labels = [], [], []
    for page, score in zip(pages, scores):
        chosen = select(page.boxes, score, cutoff)
        vectors += [page.inputs[i, len(MEASURES):] for i in chosen]
        kept_scores += [score[i] for i in chosen]
        labels += [int(page.labels[i]) for i in chosen]
    width = pages[0].inputs.shape[1] - len(MEASURES)
    return np.array(vectors).reshape(-1, width), np.array(kept_scores), np.array(labels)


def standardising_prior(pages, verdict_cutoff: float) -> Prior:
    """A prior with the mean and scale of `pages`' labelled embeddings: all the simulation reads of it."""
    rows = np.concatenate([p.inputs[p.labels >= 0, len(MEASURES):] for p in pages])
    mean, scale = rows.mean(axis=0), rows.std(axis=0)
    scale[scale < 1e-9] = 1.0
    return Prior.of_regression(mean, scale, np.zeros_like(mean), 0.0, 0.5, verdict_cutoff)


def agreement(vectors, scores, labels, prior, decided: np.ndarray, strength: float) -> tuple[int, int, int]:
    """(learned agrees, head agrees, of) on the labelled pictures not decided."""
    offsets = prior.logits(vectors, scores)
    rest = np.setdiff1d(np.arange(len(labels)), decided)
    truth = labels[rest] == 1
    correction, bias = picture_model.fit(vectors[decided], labels[decided] == 1, offsets[decided], prior, strength)
    z = (vectors[rest] - prior.mean) / prior.scale
    mine = offsets[rest] + z @ correction + bias >= 0
    return int(np.sum(mine == truth)), int(np.sum((offsets[rest] >= 0) == truth)), len(rest)


def simulate(pages, scores, cutoff, prior, decisions: int, strengths, at: float | None = None):
    """The curator's `decisions` on `pages` (kept at `at`, default the cutoff), for each strength:
    {strength: (least sure first, random draws)} as (agreed, head agreed, of), and the counts seen."""
    vectors, kept_scores, labels = kept_pictures(pages, scores, cutoff if at is None else at)
    seen = len(labels)
    labelled = np.flatnonzero(labels >= 0)
    vectors, kept_scores, labels = vectors[labelled], kept_scores[labelled], labels[labelled]
    count = min(decisions, len(labels) // 2)
    counts = (seen, len(labels), int((labels == 1).sum()), int((labels == 0).sum()), count)
    if count < 1:
        return None, counts
    unsure = np.argsort(np.abs(prior.logits(vectors, kept_scores)), kind="stable")[:count]
    draws = [np.random.default_rng(seed).choice(len(labels), count, replace=False) for seed in range(DRAWS)]
    return {strength: (np.array(agreement(vectors, kept_scores, labels, prior, unsure, strength)),
                       np.sum([agreement(vectors, kept_scores, labels, prior, d, strength) for d in draws], axis=0))
            for strength in strengths}, counts


def choose_strength(pages, inner_scores, cutoff: float, decisions: int, strengths) -> float:
    """The strength agreeing best on `pages` (least sure first and random draws, pooled), each source held out in
    turn: its pictures scored by `inner_scores` (heads that did not see it), its prior standardised on the rest."""
    agreed = dict.fromkeys(strengths, 0)
    for source in train.sources(pages):
        held = [i for i, p in enumerate(pages) if p.source == source]
        prior = standardising_prior([p for p in pages if p.source != source], cutoff)
        result, _ = simulate([pages[i] for i in held], [inner_scores[i] for i in held], cutoff, prior, decisions,
                             strengths)
        for strength, (first, drawn) in (result or {}).items():
            agreed[strength] += int(first[0] + drawn[0])
    best = max(agreed.values())
    return picture_model.PRIOR_STRENGTH if agreed.get(picture_model.PRIOR_STRENGTH) == best else \
        min(s for s in strengths if agreed[s] == best)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=pathlib.Path)
    parser.add_argument("--cache", type=pathlib.Path, default=pathlib.Path("bench/out/picture_candidates"))
    parser.add_argument("--decisions", type=int, default=20)
    parser.add_argument("--strengths", type=float, nargs="+", default=[1, 3, 10, 30, 100],
                        help="the prior strengths to choose from, leave one source out (the shipped one is added)")
    args = parser.parse_args(argv)
    if not (args.folder / "pictures.jsonl").exists():
        sys.exit(f"no pictures.jsonl in {args.folder}: give a folder laid out like ../shared/realdata")
    started = time.process_time()
    pages = train.read_folder(args.folder, args.cache)
    strengths = sorted({picture_model.PRIOR_STRENGTH, *args.strengths})
    # "chosen": each source at the strength chosen on the others; then each fixed strength (not a result).
    columns = ["chosen", *strengths]
    pooled = {(name, c): np.zeros((2, 3), np.int64) for name in SETS for c in columns}
    print(f"{len(pages)} pages, {len(train.sources(pages))} sources; up to {args.decisions} decisions per source "
          f"(at most half its labelled pictures); prior strengths {', '.join(f'{s:g}' for s in strengths)}, "
          f"shipped {picture_model.PRIOR_STRENGTH:g}")
    lines = {name: [] for name in SETS}
    for source in train.sources(pages):
        others = [p for p in pages if p.source != source]
        inner = train.held_out_scores(others)
        cutoff = train.best_cutoff(others, inner)
        chosen = choose_strength(others, inner, cutoff, args.decisions, strengths)
        head = train.fit(others, cutoff)
        prior = train.fit_prior(others, cutoff)
        held_out = [p for p in pages if p.source == source]
        scores = [head.score(p.inputs) for p in held_out]
        for name, at in (("kept", cutoff), ("all", 0.0)):
            result, counts = simulate(held_out, scores, cutoff, prior, args.decisions, strengths, at)
            line = f"  {source[:40]:40s} " + " ".join(f"{n:4d}" for n in counts) + f" {chosen:6g}  "
            if result is None:
                lines[name].append(line + " too few labelled pictures to measure")
                continue
            for column in columns:
                first, drawn = result[chosen if column == "chosen" else column]
                pooled[(name, column)] += np.stack([first, drawn])
            first, drawn = result[chosen]
            lines[name].append(line + f"  {_pair(first)}      {_pair(drawn)}")
        print(f"  [{source}] done: strength {chosen:g} chosen on the other sources", file=sys.stderr)
    for name, words in SETS.items():
        print(f"\n{name}: {words}")
        print(f"  {'source':40s} {'seen':>4s} {'label':>4s} {'pos':>4s} {'neg':>4s} {'dec':>4s} {'chosen':>6s}   "
              "least sure first: learned / head      random (5 draws): learned / head")
        print("\n".join(lines[name]))
        for column in columns:
            tag = ("pooled, each source at the strength chosen on the others" if column == "chosen" else
                   f"pooled, every source at strength {column:g} (sensitivity, not a result)")
            first, drawn = pooled[(name, column)]
            print(f"  {tag:64s}  {_pair(first)}      {_pair(drawn)}")
            if column == "chosen":
                for what, t in (("least sure first", first), ("random", drawn)):
                    if t[2]:
                        print(f"    {what}: learned {t[0] / t[2]:.3f}, head alone {t[1] / t[2]:.3f}, "
                              f"ratio learned/head {t[0] / max(t[1], 1):.3f}")
    every = train.held_out_scores(pages)
    print(f"\nthe strength to ship, chosen the same way on every source: "
          f"{choose_strength(pages, every, train.best_cutoff(pages, every), args.decisions, strengths):g} "
          f"(shipped: {picture_model.PRIOR_STRENGTH:g})")
    print(f"CPU time {time.process_time() - started:.0f} s (process time, machine loaded by others)")


def _pair(t) -> str:
    agreed, head, of = (int(v) for v in t)
    return f"{agreed / of:5.3f} / {head / of:5.3f} of {of:3d}" if of else "   -- no pictures left --  "


if __name__ == "__main__":
    main()
