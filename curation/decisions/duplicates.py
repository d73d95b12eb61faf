"""Near-duplicate plates: the same engraving reprinted across issues, found by perceptual hash.

Hashes are split into four 16-bit bands; two hashes within MAX_DISTANCE bits share at least one
band exactly when MAX_DISTANCE < 4, and usually do for a few bits more, so candidates come from band
buckets instead of comparing every pair (100,000 pages stay a fraction of a second).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from ..scoring.features import hamming

MAX_DISTANCE = 6
BANDS = 4


def _bands(value: int) -> list[int]:
    value &= (1 << 64) - 1
    return [(value >> (16 * i)) & 0xFFFF for i in range(BANDS)]


def group_near_duplicates(hashes: Sequence[int | None], max_distance: int = MAX_DISTANCE) -> list[list[int]]:
    """Groups (lists of indexes into `hashes`, two or more each) of near-identical images."""
    parent = list(range(len(hashes)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    buckets: dict[tuple[int, int], list[int]] = defaultdict(list)
    for index, value in enumerate(hashes):
        if value is not None:
            for band, key in enumerate(_bands(value)):
                buckets[(band, key)].append(index)
    for members in buckets.values():
        for i, a in enumerate(members):
            for b in members[i + 1:]:
                if root(a) != root(b) and hamming(hashes[a], hashes[b]) <= max_distance:
                    parent[root(b)] = root(a)
    groups: dict[int, list[int]] = defaultdict(list)
    for index, value in enumerate(hashes):
        if value is not None:
            groups[root(index)].append(index)
    return sorted((g for g in groups.values() if len(g) > 1), key=lambda g: g[0])


def refresh_duplicates(manifest) -> int:
    """Group the near-identical plates among pages with a picture; returns how many groups."""
    rows = manifest.conn.execute(
        "SELECT p.doc_id, p.page, p.phash FROM pages p JOIN documents d ON d.id = p.doc_id "
        "WHERE d.status != 'replaced' AND p.status = 'ok' AND p.phash IS NOT NULL "
        "AND p.picture_area >= :picture_area_min ORDER BY d.path, p.page",
        {"picture_area_min": manifest.picture_area_min},
    ).fetchall()
    groups = group_near_duplicates([row["phash"] for row in rows])
    return manifest.replace_duplicates([[(rows[i]["doc_id"], rows[i]["page"]) for i in group] for group in groups])
