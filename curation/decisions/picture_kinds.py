"""Kinds learned per archive: a kind a curator sets on a picture is suggested for the pictures that look like it.

An archive is one periodical's printing over thousands of pages, so the pictures a curator marks "halftone"
look like its other halftones far more than the shipped kind model's few sources do (curation.pictures.kind).
A picture without the curator's kind takes the kind of the marked pictures close to it, by the cosine of
their embeddings (curation.decisions.picture_similarity), where most of them (more than half) agree and
its nearest mark is no nearer to a mark of another kind (KindRule: constants chosen leave one source out); that
learned kind comes before the shipped model's suggestion, and the curator's own kind before both
(curation.captions.best.kind_of). A picture with no marked picture that close, or whose close ones disagree,
keeps the shipped model's suggestion (or none).

Nothing is stored in the manifest: the learned kinds are read from the marked pictures' embeddings and the
asked pictures' ones, so an undo, a redrawn box (its embedding is stale until the picture job runs again) or a
kind set back to the suggestion counts at once. The marked pictures are few (a curator marks dozens, not
millions) and found through their own index; an export's many pictures are compared with the embeddings held
in memory, and what they learned kept until the marks or the embeddings change.
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ..manifest import picture_embeddings
from ..manifest.store import Manifest
from .picture_similarity import KEEPER, stamp

# The rule is chosen leave one source out (bench/kind_neighbours.py: each source of the shared real pages and
# ../shared/boxed taken as one archive, a curator marking 3, 5 or 10 of its pictures at random or all but one, the
# others suggested from those marks only): for each source, of the rules (a cutoff of likeness from 0.6 to 0.8 and
# a margin from 0 to 0.15) with no wrong suggestion on any other source, the one with the most right ones, then
# measured on it. Held out so, 384 / 5, 432 / 15, 401 / 7 and 52 / 1 right / wrong (1.3, 3.4, 1.7 and 1.9 %
# wrong pooled; ndl-lab, whose woodblock diagrams, engravings and woodcuts are cut in one hand, 10, 15, 5 and 6 %
# on its own). Asking for no wrong suggestion on the other sources rather than 1 in 20 is what carries: the other
# sources show only some of a new one's near pairs of different kinds (asked for 1 in 20 on each, the choice was
# wrong on 1 in 10 pooled). The same choice on every source gives these constants (372 / 0, 419 / 0, 370 / 0,
# 50 / 0): two pictures of one kind in one source measure 0.45 at the median, two of different kinds up to
# 0.72 (docs/captions.md).
KIND_LIKE = 0.725
# How much closer the suggested kind's nearest mark must be than the nearest mark of any other kind: chosen 0 on
# every source, 0.05 where ndl-lab is held out.
KIND_MARGIN = 0.0
CHUNK = 4096  # pictures compared at once: 20 MB of float32 embeddings, whatever the archive's size
FEW = 512  # asked pictures read by id (a screen, a picture); more are compared with the embeddings held in memory


@dataclass(frozen=True)
class KindRule:
    """When the curator's marks suggest a kind: the close marks (cosine at least `like`) mostly (more than half) of
    one kind, whose nearest mark is at least `margin` closer than the nearest mark of any other kind."""

    like: float = KIND_LIKE
    margin: float = KIND_MARGIN

    def learned(self, similarity: np.ndarray, kinds: np.ndarray) -> LearnedKind | None:
        """The kind marks of `kinds` at cosines `similarity` (one each) suggest, or None."""
        learned = agreed_kind(kinds[similarity >= self.like])
        if learned is None:
            return None
        other = similarity[kinds != learned.kind]
        if other.size and similarity[kinds == learned.kind].max() - other.max() < self.margin:
            return None
        return learned


KIND_RULE = KindRule()


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


def learned_kinds(manifest: Manifest, ids: Iterable[int], rule: KindRule = KIND_RULE) -> dict[int, LearnedKind]:
    """The learned kind of each of `ids` that has one (a picture the curator marked itself has its own kind and
    none here). A few pictures (a screen, one picture) are read by id; more (an export's) are compared with the
    manifest's embeddings held in memory (picture_similarity.KEEPER), and what they learn is kept until the
    marks or the embeddings change, so a page that asks on every run reads them once."""
    marked = marked_kinds(manifest)
    wanted = [int(i) for i in ids if int(i) not in marked]
    if not marked or not wanted:
        return {}
    marks = _Marks.read(manifest, marked)
    if marks is None:
        return {}
    if len(wanted) > FEW:
        every = _every_learned(manifest, marks, rule)
        return {i: every[i] for i in wanted if i in every}
    found, vectors = picture_embeddings.read(manifest.conn, wanted)
    return marks.agreed(found, _unit(vectors), rule)


@dataclass(frozen=True)
class _Marks:
    """The marked pictures' kinds and unit embeddings (as their boxes are now)."""

    ids: tuple[int, ...]
    kinds: np.ndarray
    unit: np.ndarray

    @classmethod
    def read(cls, manifest: Manifest, marked: dict[int, str]) -> _Marks | None:
        ids, vectors = picture_embeddings.read(manifest.conn, marked)
        if not len(ids):
            return None
        return cls(tuple(int(i) for i in ids), np.array([marked[int(i)] for i in ids], object), _unit(vectors))

    def key(self) -> tuple:
        return self.ids, tuple(self.kinds)

    def agreed(self, ids: np.ndarray, unit: np.ndarray, rule: KindRule) -> dict[int, LearnedKind]:
        """The learned kind of each of `ids` (their unit embeddings `unit`) that has one."""
        learned = {}
        similarity = unit @ self.unit.T
        for picture_id, row in zip(ids, similarity):
            kind = rule.learned(row, self.kinds) if row.max(initial=-1.0) >= rule.like else None
            if kind is not None and int(picture_id) not in self.ids:
                learned[int(picture_id)] = kind
        return learned


_LEARNED: OrderedDict[tuple, dict[int, LearnedKind]] = OrderedDict()
_LEARNED_LOCK = threading.Lock()
LEARNED_KEPT = 2  # manifests (or mark sets) whose every learned kind is kept


def _every_learned(manifest: Manifest, marks: _Marks, rule: KindRule) -> dict[int, LearnedKind]:
    """Every embedded picture's learned kind, kept for these marks and these embeddings."""
    key = (str(manifest.path), stamp(manifest), marks.key(), rule)
    with _LEARNED_LOCK:
        if key in _LEARNED:
            _LEARNED.move_to_end(key)
            return _LEARNED[key]
    found = KEEPER.embeddings(manifest)
    learned = {}
    for start in range(0, len(found), CHUNK):
        unit = found.vectors[start:start + CHUNK].astype(np.float32) / np.maximum(
            found.norms[start:start + CHUNK, None], 1e-12)
        learned.update(marks.agreed(found.ids[start:start + CHUNK], unit, rule))
    with _LEARNED_LOCK:
        _LEARNED[key] = learned
        while len(_LEARNED) > LEARNED_KEPT:
            _LEARNED.popitem(last=False)
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
    close = [int(i) for i in found.at_least(KIND_RULE.like) if int(i) != int(picture_id)]
    learned = learned_kinds(manifest, close)
    return [i for i in close if i in learned and learned[i].kind == marked]


def _unit(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, np.float32)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
