"""How the kinds learned per archive (curation.decisions.picture_kinds) do on real pictures, by the cutoff of
likeness: each source of ../shared/realdata and ../shared/boxed is taken as one archive, a curator marks some
of its pictures' kinds, and every other picture of it is suggested the kind most of its close marked ones have.
No picture learns from another source: an archive learns from its own curator's marks only.

For each cutoff it prints, over the counted pictures left unmarked, how many were suggested the right kind, a
wrong one, or none; a curator marking 3, 5 or 10 pictures of the archive (drawn at random, 20 draws; a kind
with fewer pictures than that is marked whole) and every other picture. The kinds' target ("A curator's
afternoon, part three"): at most 1 in 20 suggestions wrong.

    python bench/kind_neighbours.py ../shared/realdata --extra ../shared/boxed

The pictures' embeddings are kept under --cache (curation.pictures.kind_train reads and embeds them).
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from curation.decisions.picture_kinds import KIND_LIKE, agreed_kind  # noqa: E402
from curation.pictures.kind_train import read_all  # noqa: E402

CUTOFFS = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8)
MARKED = (3, 5, 10, None)  # None: every other picture of the archive
DRAWS = 20


def tally(kinds: np.ndarray, counts: np.ndarray, similarity: np.ndarray, marked: np.ndarray, cutoff: float
          ) -> tuple[int, int, int]:
    """(right, wrong, none) over the counted pictures of one archive not in `marked` (a bool mask)."""
    right = wrong = none = 0
    for i in np.flatnonzero(~marked & counts):
        learned = agreed_kind(kinds[marked & (similarity[i] >= cutoff)])
        if learned is None:
            none += 1
        elif learned.kind == kinds[i]:
            right += 1
        else:
            wrong += 1
    return right, wrong, none


def archive_marks(count: int | None, size: int, rng: np.random.Generator, leave: int | None = None) -> np.ndarray:
    marked = np.zeros(size, bool)
    if count is None:
        marked[:] = True
        marked[leave] = False
    else:
        marked[rng.choice(size, min(count, size - 1), replace=False)] = True
    return marked


def measure(examples, cutoffs=CUTOFFS, marks=MARKED, draws=DRAWS, seed=54) -> dict:
    """{source: {(marked, cutoff): [right, wrong, none]}} for the archives (sources with two pictures or more)."""
    rng = np.random.default_rng(seed)
    results = {}
    for source in sorted({e.source for e in examples}):
        members = [e for e in examples if e.source == source]
        if len(members) < 2:
            continue
        own = results[source] = {(m, c): [0, 0, 0] for m in marks for c in cutoffs}
        vectors = np.array([e.vector for e in members], np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        similarity = vectors @ vectors.T
        kinds = np.array([e.kind for e in members], object)
        counts = np.array([e.counts for e in members], bool)
        for m in marks:
            rounds = [archive_marks(None, len(members), rng, leave=i) for i in range(len(members))] if m is None \
                else [archive_marks(m, len(members), rng) for _ in range(draws)]
            for marked in rounds:
                for c in cutoffs:
                    own[(m, c)] = [a + b for a, b in zip(own[(m, c)], tally(kinds, counts, similarity, marked, c))]
    return results


def pooled(results: dict) -> dict:
    """measure's figures summed over the sources."""
    total: dict = {}
    for own in results.values():
        for key, figures in own.items():
            total[key] = [a + b for a, b in zip(total.get(key, [0, 0, 0]), figures)]
    return total


def chosen_cutoff(results: dict, marked: int | None, target: float = 1 / 20) -> float:
    """The cutoff with the most right suggestions where no source has more than `target` of its suggestions
    wrong (an archive is one source: a cutoff fine pooled can be wrong on one archive's every other picture)."""
    def fits(c):
        return all(own[(marked, c)][1] <= target * (own[(marked, c)][0] + own[(marked, c)][1])
                   for own in results.values())

    fit = [c for c in CUTOFFS if fits(c)]
    total = pooled(results)
    return max(fit, key=lambda c: total[(marked, c)][0]) if fit else max(CUTOFFS)


def held_out(examples, marked: int | None = 5) -> tuple[list[str], list[int]]:
    """Leave one source out: each source's suggestions at the cutoff chosen on the other sources; the lines to
    print and the pooled (right, wrong, none)."""
    lines, total = [], [0, 0, 0]
    everyone = measure(examples, marks=(marked,))
    for source, own in everyone.items():
        cutoff = chosen_cutoff({s: r for s, r in everyone.items() if s != source}, marked)
        right, wrong, none = own[(marked, cutoff)]
        total = [a + b for a, b in zip(total, (right, wrong, none))]
        lines.append(f"{source:45s} cutoff {cutoff:.2f}: {right} right, {wrong} wrong, {none} none")
    return lines, total


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=pathlib.Path)
    parser.add_argument("--extra", type=pathlib.Path, action="append", default=[])
    parser.add_argument("--cache", type=pathlib.Path, default=pathlib.Path("bench/out/kinds"))
    args = parser.parse_args(argv)
    examples = read_all(args.folder, args.extra, args.cache)
    results = pooled(measure(examples))
    print(f"{len(examples)} pictures; the shipped cutoff of likeness is {KIND_LIKE}")
    print("marked      cutoff   right   wrong    none   wrong share of suggestions")
    for (m, c), (right, wrong, none) in results.items():
        share = wrong / (right + wrong) if right + wrong else 0.0
        print(f"{'all others' if m is None else m:>10}  {c:6.2f}  {right:6d}  {wrong:6d}  {none:6d}   {share:.3f}")
    lines, (right, wrong, none) = held_out(examples)
    print("\nLeave one source out, a curator marking 5 (the cutoff chosen on the other sources: most right with at "
          "most 1 in 20 wrong on each):")
    print("\n".join(lines))
    print(f"pooled: {right} right, {wrong} wrong, {none} none")


if __name__ == "__main__":
    main()
