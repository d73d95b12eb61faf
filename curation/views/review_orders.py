"""The Pictures view's orders that read the pictures' embeddings instead of SQL: More like this (by likeness
to one picture), least sure first by the model learned from the curator's picture decisions, and the reprints
together. Each is a list of picture ids that curation.views.picture_views.ordered_screen pages through,
with a word for each card; each says plainly when the pictures are not embedded yet, and what embeds them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..decisions import picture_model
from ..decisions.picture_similarity import EmbeddingKeeper, reprint_order

ORDERS = {
    "learned": "Least sure first (learned from picture decisions)",
    "reprints": "Reprints only, together",
}
EMBED_COMMAND = "python -m curation embed"


@dataclass(frozen=True)
class Order:
    ids: np.ndarray  # picture ids in the order shown
    words: dict[int, str] = field(default_factory=dict)  # what a card says of its place in the order
    note: str | None = None  # what the view says above the grid (pictures left out, why)


def not_embedded(embedded: int, pictures: int) -> str | None:
    """What the view says when some or all pictures have no embedding yet; None when all have one."""
    if embedded >= pictures:
        return None
    if not embedded:
        return (f"No picture of this manifest is embedded yet, so pictures cannot be compared: the picture job "
                f"embeds them after ingest (or run `{EMBED_COMMAND}`).")
    return (f"{pictures - embedded:,} of {pictures:,} pictures are not embedded yet and are left out of this order "
            f"until the picture job embeds them (`{EMBED_COMMAND}`).")


def like_order(keeper: EmbeddingKeeper, manifest, picture_id: int, pictures: int) -> Order:
    found = keeper.like(manifest, picture_id)
    embedded = len(keeper.embeddings(manifest))
    if found is None:
        return Order(np.zeros(0, np.int64), note=not_embedded(embedded, pictures) or
                     "This picture is not embedded yet (its box is new or was redrawn): the picture job embeds it "
                     f"(`{EMBED_COMMAND}`).")
    words = {int(i): f"alike {s:.2f}" for i, s in zip(found.ids[:5000], found.similarity[:5000])}
    words[int(picture_id)] = "this picture"
    return Order(found.ids, words, not_embedded(embedded, pictures))


def like_words(keeper: EmbeddingKeeper, manifest, picture_id: int, ids: list[int]) -> dict[int, str]:
    """The likeness of each of a screen's pictures to `picture_id` (a screen past the first 5,000)."""
    found = keeper.like(manifest, picture_id)
    if found is None:
        return {}
    at = dict(zip(found.ids.tolist(), found.similarity.tolist()))
    return {i: "this picture" if i == picture_id else f"alike {at[i]:.2f}" for i in ids if i in at}


def learned_order(keeper: EmbeddingKeeper, manifest, pictures: int) -> Order:
    model = picture_model.stored(manifest)
    found = keeper.embeddings(manifest)
    def order(embeddings):
        return picture_model.least_sure_first(picture_model.logits_of_all(manifest, model, embeddings), embeddings.ids)

    ordered = keeper.derived(manifest, ("learned", model.version if model else None), order)
    note = not_embedded(len(found), pictures)
    if model is None:
        note = " ".join(filter(None, ["No model is learned from your picture decisions yet: this is the shipped "
                                      "verdict's order; decide some pictures and press Learn.", note]))
    return Order(ordered, note=note)


FINDING = "Finding the reprints among {count:,} embedded pictures (minutes at a million): Refresh to see them."


def reprints(keeper: EmbeddingKeeper, manifest, pictures: int) -> Order:
    found = keeper.reprints(manifest)
    embedded = len(keeper.embeddings(manifest))
    if found is None:
        return Order(np.zeros(0, np.int64), note=FINDING.format(count=embedded))
    ids, groups = reprint_order(found)
    note = not_embedded(embedded, pictures)
    if not len(ids) and note is None:
        note = "No picture is printed twice: no two pictures' embeddings are alike enough."
    words = {i: f"reprint group {n} · {size} pictures" for i, (n, size) in groups.items()}
    return Order(ids, words, note)
