"""How alike two pictures are: the cosine of their embeddings (curation.manifest.picture_embeddings), for
Review's More like this, Exclude / Include all like this, and the reprints (the same engraving printed again).

Every comparison is a NumPy product with the manifest's embeddings, held in memory once per manifest (half
precision, as stored: 2.5 GB at a million pictures) by an EmbeddingKeeper and read again only when the
pictures were scored or embedded again (a job). A box a curator redraws keeps its old embedding here until
the picture job embeds it again: alike enough for sorting, and the picture itself is never changed by it.

Reprints are found as the page-level near-duplicates are (curation.decisions.duplicates): candidates share a
bucket, here a cell of a k-means of the embeddings, so pictures far apart are never compared; each candidate
pair is then measured exactly.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from ..manifest import picture_embeddings
from ..manifest.page_rows import scoring_stamp
from ..manifest.store import Manifest

CHUNK = 16_384  # rows multiplied at once: 84 MB of float32 at a time, whatever the manifest's size
LIKE_DEFAULT = 0.80  # the slider's start: below the reprints, above two unrelated pictures of one kind
# Where one engraving printed twice parts from two engravings, measured with the real network on drawn
# engravings (tests/test_picture_similarity.py draws them): reprints (cropped up to 2 % differently, fainter,
# noisy, JPEG) measure 0.94 at the median and 0.90 at the 5th percentile; two different engravings of one
# style 0.77 at the median, 0.87 at the 99th percentile and at most 0.896 over 1,770 pairs. On the shared real
# pages' candidates (many of them overlapping crops of one picture) 99.9 % of pairs are under 0.90. A reprint
# group should never join different pictures (a bulk action may follow it): the cutoff sits above them all.
REPRINT = 0.90
SEED = 20260
BLOCK = 2048  # rows of a bucket compared at once
EXACT = 4000  # up to this many pictures (in all, or in a cell) every pair is compared
DEPTH = 3  # cells split at most this many times


@dataclass(frozen=True)
class Embeddings:
    """A manifest's picture embeddings: ids ascending, vectors as stored, and their lengths."""

    ids: np.ndarray
    vectors: np.ndarray
    norms: np.ndarray

    def __len__(self) -> int:
        return len(self.ids)

    def row(self, picture_id: int) -> int | None:
        at = int(np.searchsorted(self.ids, picture_id))
        return at if at < len(self.ids) and self.ids[at] == picture_id else None

    def products(self, direction: np.ndarray) -> np.ndarray:
        """Every vector's dot product with `direction`, a chunk at a time (float16 has no fast product)."""
        direction = np.asarray(direction, np.float32)
        out = np.empty(len(self.ids), np.float32)
        for start in range(0, len(self.ids), CHUNK):
            out[start:start + CHUNK] = self.vectors[start:start + CHUNK].astype(np.float32) @ direction
        return out

    def similarity(self, picture_id: int) -> np.ndarray | None:
        """The cosine of every picture with `picture_id`; None when that one has no embedding."""
        row = self.row(picture_id)
        if row is None:
            return None
        return self.products(self.vectors[row].astype(np.float32)) / np.maximum(self.norms * self.norms[row], 1e-12)


def embeddings(manifest: Manifest) -> Embeddings:
    """Read every current embedding of the manifest (a pass over the table: use an EmbeddingKeeper)."""
    ids, vectors = picture_embeddings.read(manifest.conn, dtype=np.float16)
    norms = np.concatenate([np.linalg.norm(vectors[start:start + CHUNK].astype(np.float32), axis=1)
                            for start in range(0, len(vectors), CHUNK)] or [np.zeros(0, np.float32)])
    return Embeddings(ids, vectors, norms.astype(np.float32))


@dataclass(frozen=True)
class Likeness:
    """Pictures in order of likeness to one (itself first), with their cosine."""

    picture_id: int
    ids: np.ndarray
    similarity: np.ndarray

    def at_least(self, similarity: float) -> np.ndarray:
        """The ids at least `similarity` alike (the picture itself among them)."""
        return self.ids[:int(np.searchsorted(-self.similarity, -similarity, side="right"))]


def like(found: Embeddings, picture_id: int) -> Likeness | None:
    similarity = found.similarity(picture_id)
    if similarity is None:
        return None
    similarity[found.row(picture_id)] = np.inf  # itself first, whatever float16 rounding says
    order = np.lexsort((found.ids, -similarity))
    ordered = np.minimum(similarity[order], 1.0)
    return Likeness(int(picture_id), found.ids[order], ordered)


def reprint_groups(found: Embeddings, cutoff: float = REPRINT) -> list[np.ndarray]:
    """Groups of picture ids (two or more, ascending; groups by their first id) whose embeddings are at least
    `cutoff` alike, pair by pair, joined through shared members."""
    if len(found) < 2:
        return []
    parent = np.arange(len(found))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for members in _buckets(found):
        unit = _unit(found, members)
        for start in range(0, len(members), BLOCK):  # a large bucket a block of rows at a time
            close = np.argwhere(unit[start:start + BLOCK] @ unit[start:].T >= cutoff)
            for a, b in close[close[:, 1] > close[:, 0]]:
                ra, rb = root(members[start + a]), root(members[start + b])
                if ra != rb:
                    parent[max(ra, rb)] = min(ra, rb)
    groups = _grouped(found.ids, np.array([root(i) for i in range(len(found))]))
    return sorted(groups, key=lambda g: int(g[0]))


def _grouped(ids: np.ndarray, roots: np.ndarray) -> list[np.ndarray]:
    order = np.argsort(roots, kind="stable")
    split = np.flatnonzero(np.diff(roots[order])) + 1
    return [ids[np.sort(part)] for part in np.split(order, split) if len(part) > 1]


def _buckets(found: Embeddings):
    """Row indexes of pictures that may be alike, bucket by bucket (two or more each). Up to EXACT pictures,
    all of them as one bucket (every pair measured: seconds at most); past that, the cells of a spherical
    k-means of the embeddings (about the square root of their number), each picture in the cells of its two
    nearest centres, so two pictures alike enough to be reprints nearly always share one; a cell still over
    EXACT is split the same way (a few levels at most)."""
    yield from _cells(found, np.arange(len(found)), depth=0)


def _cells(found: Embeddings, rows: np.ndarray, depth: int):
    if len(rows) <= EXACT or depth >= DEPTH:
        if len(rows) > 1:
            yield rows
        return
    centres = _centres(found, rows, max(2, int(np.sqrt(len(rows)))))
    nearest = np.empty((len(rows), 2), np.int64)
    for start in range(0, len(rows), CHUNK):
        closeness = _unit(found, rows[start:start + CHUNK]) @ centres.T
        nearest[start:start + CHUNK] = np.argpartition(-closeness, 1, axis=1)[:, :2]
    cells = np.concatenate([nearest[:, 0], nearest[:, 1]])
    members = np.concatenate([rows, rows])
    order = np.argsort(cells, kind="stable")
    for cell in np.split(members[order], np.flatnonzero(np.diff(cells[order])) + 1):
        if len(cell) < len(rows):  # a cell that holds every picture cannot be split by these centres
            yield from _cells(found, np.unique(cell), depth + 1)
        elif len(cell) > 1:
            yield np.unique(cell)


def _centres(found: Embeddings, rows: np.ndarray, count: int, rounds: int = 6) -> np.ndarray:
    """Spherical k-means centres of a sample of the embeddings of `rows` (unit vectors), deterministic."""
    rng = np.random.default_rng(SEED)
    sample = _unit(found, np.sort(rng.choice(rows, min(len(rows), 30 * count), replace=False)))
    centres = sample[rng.choice(len(sample), count, replace=False)]
    for _ in range(rounds):
        owner = np.argmax(sample @ centres.T, axis=1)
        sums = np.zeros_like(centres)
        np.add.at(sums, owner, sample)
        empty = ~sums.any(axis=1)
        sums[empty] = centres[empty]
        centres = sums / np.linalg.norm(sums, axis=1, keepdims=True)
    return centres


def _unit(found: Embeddings, rows: np.ndarray) -> np.ndarray:
    return found.vectors[rows].astype(np.float32) / np.maximum(found.norms[rows, None], 1e-12)


def stamp(manifest: Manifest) -> tuple:
    """Changes when the embeddings may have: a scoring or a job (the picture job embeds), a new embedding."""
    newest = manifest.conn.execute("SELECT MAX(picture_id) FROM picture_embeddings").fetchone()[0]
    return (*scoring_stamp(manifest), newest)


@dataclass
class _Held:
    stamp: tuple
    found: Embeddings
    likes: OrderedDict = field(default_factory=OrderedDict)
    reprints: list | None = None
    finding: threading.Thread | None = None  # the thread finding the reprints of many pictures
    derived: dict = field(default_factory=dict)


def _find_reprints(held: _Held) -> None:
    held.reprints = reprint_groups(held.found)


class EmbeddingKeeper:
    """A few manifests' embeddings kept in memory between script runs, shared by the sessions that show them
    (the app holds one), with the last few More like this orders and the reprint groups."""

    MANIFESTS = 2
    LIKES = 8

    def __init__(self):
        self._lock = threading.Lock()
        self._held: OrderedDict[str, _Held] = OrderedDict()

    def held(self, manifest: Manifest) -> _Held:
        key, now = str(manifest.path), stamp(manifest)
        with self._lock:
            held = self._held.get(key)
            if held is None or held.stamp != now:
                held = self._held[key] = _Held(now, embeddings(manifest))
            self._held.move_to_end(key)
            while len(self._held) > self.MANIFESTS:
                self._held.popitem(last=False)
            return held

    def embeddings(self, manifest: Manifest) -> Embeddings:
        return self.held(manifest).found

    def like(self, manifest: Manifest, picture_id: int) -> Likeness | None:
        held = self.held(manifest)
        with self._lock:
            if picture_id in held.likes:
                held.likes.move_to_end(picture_id)
                return held.likes[picture_id]
        found = like(held.found, picture_id)
        with self._lock:
            held.likes[picture_id] = found
            while len(held.likes) > self.LIKES:
                held.likes.popitem(last=False)
        return found

    def reprints(self, manifest: Manifest) -> list[np.ndarray] | None:
        """The reprint groups; past EXACT pictures they are found in a thread of their own (minutes at a
        million pictures, not a script run's): None until they are."""
        held = self.held(manifest)
        with self._lock:
            if held.reprints is None and len(held.found) <= EXACT:
                held.reprints = reprint_groups(held.found)
            elif held.reprints is None and held.finding is None:
                held.finding = threading.Thread(target=_find_reprints, args=(held,), daemon=True,
                                                name="finding reprints")
                held.finding.start()
            return held.reprints

    def derived(self, manifest: Manifest, key, make):
        """`make(embeddings)` kept with these embeddings under `key` (a learned model's scores, say)."""
        held = self.held(manifest)
        if key not in held.derived:
            held.derived[key] = make(held.found)
        return held.derived[key]


KEEPER = EmbeddingKeeper()  # this process's: the app's pages and a bulk job's take share it


def reprint_order(groups: list[np.ndarray]) -> tuple[np.ndarray, dict[int, tuple[int, int]]]:
    """The pictures of the reprint groups, group by group, and each one's (group number from 1, its size)."""
    if not groups:
        return np.zeros(0, np.int64), {}
    ids = np.concatenate(groups)
    where = {int(i): (n, len(g)) for n, g in enumerate(groups, 1) for i in g}
    return ids, where


LIKE_TABLE = "like_this"  # temp.like_this: the ids of a Like's pictures, for SQL that takes a view's pictures
AMONG_LIKE = f"AND x.id IN (SELECT id FROM temp.{LIKE_TABLE})"


def hold_like(manifest: Manifest, picture_id: int, similarity: float, keeper: EmbeddingKeeper | None = None) -> int:
    """The pictures at least `similarity` like `picture_id` as temp.LIKE_TABLE (AMONG_LIKE reads it); how many
    (none when the picture has no embedding)."""
    found = (keeper or KEEPER).like(manifest, int(picture_id))
    ids = found.at_least(float(similarity)) if found is not None else np.zeros(0, np.int64)
    conn = manifest.conn
    conn.execute(f"DROP TABLE IF EXISTS temp.{LIKE_TABLE}")
    conn.execute(f"CREATE TEMP TABLE {LIKE_TABLE} (id INTEGER PRIMARY KEY)")
    conn.executemany(f"INSERT INTO temp.{LIKE_TABLE} (id) VALUES (?)", ((int(i),) for i in ids))
    return len(ids)
