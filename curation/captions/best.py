"""Which of a picture's three captions it shows and exports: the curator's, else its printed legend, else a
captioning model's. The curator's always wins; a job never writes it."""

from __future__ import annotations

# In the order they win; the names are the pictures table's columns.
CAPTION_SOURCES = ("caption", "legend", "auto_caption")
# A legend read less surely than this is taken for hatching, an ornament or a stamp, not a caption (chosen leave
# one source out: bench/legend_quality.py). The reader keeps no such legend; one stored before it did is not used.
LEGEND_CONFIDENCE_MIN = 0.85
SOURCE_WORDS = {"caption": "the curator's caption", "legend": "the printed legend",
                "auto_caption": "the model's caption"}


def caption_source(caption: str | None, legend: str | None, auto_caption: str | None) -> str | None:
    """The name of the caption that wins ("caption", "legend", "auto_caption"), None when all are blank."""
    for name, text in zip(CAPTION_SOURCES, (caption, legend, auto_caption)):
        if text and text.strip():
            return name
    return None


def best_caption(caption: str | None, legend: str | None, auto_caption: str | None) -> str | None:
    """The curator's caption, else the legend, else the model's caption (None when all are blank)."""
    source = caption_source(caption, legend, auto_caption)
    return None if source is None else {"caption": caption, "legend": legend, "auto_caption": auto_caption}[source]


def _get(row, name: str):
    """The row's column `name`, None where it has none (a row read before the column was asked for); a lookup,
    not a list of the row's 50 names each time (the export's selection asks four a picture)."""
    try:
        return row[name]
    except (IndexError, KeyError):  # sqlite3.Row's missing name, a dict's
        return None


def counted_sources(row) -> tuple[str | None, str | None, str | None]:
    """A picture row's caption, legend and model caption as they count for what it shows and exports: a
    legend or model caption the curator switched off ("no legend": it is wrong) counts as none, so clearing
    the caption never brings a wrong legend back; so does a legend read less surely than LEGEND_CONFIDENCE_MIN."""
    confidence = _get(row, "legend_confidence")
    unsure = confidence is not None and confidence < LEGEND_CONFIDENCE_MIN
    legend = None if _get(row, "no_legend") or unsure else row["legend"]
    auto_caption = None if _get(row, "no_auto_caption") else row["auto_caption"]
    return row["caption"], legend, auto_caption


def kind_of(row, learned=None) -> str | None:
    """A picture's kind: the curator's, else the kind learned from the pictures like it that the curator marked
    (`learned`, else the row's `kind_learned`: a curation.decisions.picture_kinds.LearnedKind), else the shipped
    model's suggestion (None where none is sure)."""
    learned = learned or _get(row, "kind_learned")
    return _get(row, "kind") or (learned.kind if learned else None) or _get(row, "kind_suggested")


def kind_source(row) -> str | None:
    """Where a picture's kind came from, in words for Review ("suggested: engraving, like 3 you marked"), None
    where it has none."""
    learned = _get(row, "kind_learned")
    if _get(row, "kind"):
        return f"{row['kind']}, set by a curator"
    if learned:
        return f"suggested: {learned.kind}, {learned.words()}"
    if _get(row, "kind_suggested"):
        return f"suggested: {row['kind_suggested']}, from its look"
    return None
