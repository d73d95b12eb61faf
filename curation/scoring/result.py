"""What scoring one page produced, as the ingest hands it to the manifest."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PageResult:
    """What scoring one page produced; `sigma` is None when the page failed."""

    page: int
    status: str
    sigma: float | None = None
    width: int | None = None
    height: int | None = None
    method: str | None = None
    error: str | None = None
    thumbnail: bytes | None = None
    features: dict | None = None  # column -> value, see curation.scoring.features
    # Each found picture's card, in the order of features["pictures"] (curation.export.card);
    # None where one could not be cut.
    picture_cards: tuple[bytes | None, ...] | None = None
    # Each found picture's network input for the picture job, a PNG (curation.pictures.embedding.encoded_inputs),
    # in the same order; None where the picture job will not follow or a box lies outside the page.
    picture_inputs: tuple[bytes | None, ...] | None = None
