"""Kinds learned per archive: a kind a curator sets on a picture is suggested for the pictures that look like it.

An archive is one periodical's printing over thousands of pages, so the pictures a curator marks "halftone"
look like its other halftones far more than the shipped kind model's few sources do (curation.pictures.kind).
A picture without the curator's kind takes the kind of the marked pictures close to it, by the cosine of
their embeddings (curation.decisions.picture_similarity), where most of them (more than half) agree; that
learned kind comes before the shipped model's suggestion, and the curator's own kind before both
(curation.captions.best.kind_of). A picture with no marked picture that close, or whose close ones disagree,
keeps the shipped model's suggestion (or none).

Nothing is stored: the learned kinds are read from the marked pictures' embeddings and the asked pictures'
ones each time, so an undo, a redrawn box (its embedding is stale until the picture job runs again) or a
kind set back to the suggestion counts at once. The marked pictures are few (a curator marks dozens, not
millions) and found through their own index.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ..manifest import picture_embeddings
from ..manifest.store import Manifest
from .picture_similarity import KEEPER

# How alike a picture must be to one the curator marked to take its kind. Measured leave one source out on the
# shared real pages and ../shared/boxed (bench/kind_neighbours.py: each source's pictures as one archive, a
# curator marking some of the others).
# At 0.75 no suggestion was wrong (a curator marking 3, 5 or 10 pictures of each source, or all but one: 304,
# 340, 306 and 44 right), at 0.70 1-5 % were, at 0.65 4-5 %: 0.75 keeps the kinds' target of at most 1 wrong
# in 20 with room. It leaves most pictures to the shipped model (a third to a fifth are suggested), which is
# honest: two pictures of one kind in one source measure 0.45 at the median, and two of different kinds up to
# 0.69 at the 99th percentile.
KIND_LIKE = 0.75
CHUNK = 4096  # asked pictures compared at once: 20 MB of float32 embeddings, whatever the archive's size


@dataclass(frozen=True)
class LearnedKind:
    """The kind the curator's marks suggest for a picture, and how many of the close marked pictures have it."""

    kind: str
    like: int

    def words(self) -> str:
        """"like 3 you marked": where the suggestion came from, for Review."""
        return f"like {self.like} you marked"


def marked_kinds(manifest: Manifest) -> dict[int, str]:
    """The pictures a curator set a kind on (not deleted), by id."""
    return dict(manifest.conn.execute(
        "SELECT id, kind FROM pictures INDEXED BY pictures_kind_set WHERE kind IS NOT NULL AND NOT deleted"))


def learned_kinds(manifest: Manifest, ids: Iterable[int], similarity: float = KIND_LIKE) -> dict[int, LearnedKind]:
    """The learned kind of each of `ids` that has one (a picture the curator marked itself has its own kind and
    none here)."""
    marked = marked_kinds(manifest)
    wanted = [int(i) for i in ids if int(i) not in marked]
    if not marked or not wanted:
        return {}
    marked_ids, marked_vectors = picture_embeddings.read(manifest.conn, marked)
    if not len(marked_ids):
        return {}
    marked_unit = _unit(marked_vectors)
    marked_kind = np.array([marked[int(i)] for i in marked_ids], object)
    learned = {}
    for start in range(0, len(wanted), CHUNK):
        found, vectors = picture_embeddings.read(manifest.conn, wanted[start:start + CHUNK])
        if not len(found):
            continue
        close = (_unit(vectors) @ marked_unit.T) >= similarity
        for picture_id, row in zip(found, close):
            kind = agreed_kind(marked_kind[row])
            if kind is not None:
                learned[int(picture_id)] = kind
    return learned


def agreed_kind(kinds: np.ndarray) -> LearnedKind | None:
    """The kind most of the close marked pictures have (more than half of them), None where none is close or
    they disagree."""
    if not len(kinds):
        return None
    kind, count = Counter(kinds.tolist()).most_common(1)[0]
    return LearnedKind(kind, count) if 2 * count > len(kinds) else None


def with_learned_kinds(manifest: Manifest, rows: list[dict]) -> list[dict]:
    """`rows` (pictures as dicts, by `id`) each with `kind_learned` (a LearnedKind, or None)."""
    learned = learned_kinds(manifest, (row["id"] for row in rows if not row.get("kind")))
    return [{**row, "kind_learned": learned.get(row["id"])} for row in rows]


def suggested_like(manifest: Manifest, picture_id: int) -> list[int]:
    """The pictures (ids, not the marked one itself) now suggested the kind the curator set on `picture_id`
    because they look like it: for the word that says what marking it taught."""
    marked = marked_kinds(manifest).get(int(picture_id))
    found = KEEPER.like(manifest, int(picture_id)) if marked else None
    if found is None:
        return []
    close = [int(i) for i in found.at_least(KIND_LIKE) if int(i) != int(picture_id)]
    learned = learned_kinds(manifest, close)
    return [i for i in close if i in learned and learned[i].kind == marked]


def _unit(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, np.float32)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
