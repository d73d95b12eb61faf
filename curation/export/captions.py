"""Captions: one line per image from a template, e.g. "{trigger}, {class}, {best_caption}".

A picture has three captions: the curator's (`{caption}`: the picture's, else its page's), its printed
legend read by OCR (`{legend}`) and a captioning model's (`{auto_caption}`); `{best_caption}` is the first
of them that is not empty, the curator's winning (curation.captions.best); a legend or model caption the curator
switched off ("no legend") is empty. `{kind}` is the picture's kind (the curator's, else the analysis's
suggestion: engraving, woodcut, halftone, cartoon, map, diagram). A whole-page image takes the legend, model
caption and kind of its page's largest kept picture.

Trainers read a caption file's first line only (sd-scripts) or the whole file as one prompt, so a
caption is always one line. Parts a page leaves empty (no per-page caption yet) vanish with their
comma instead of leaving "ohwx, engraving, " behind.
"""

from __future__ import annotations

import pathlib
import re
import string

from ..captions.best import best_caption
from ..sources.page_numbers import page_number

PLACEHOLDERS = ("trigger", "class", "kind", "best_caption", "caption", "legend", "auto_caption", "doc", "page",
                "picture")
_SPACES = re.compile(r"\s+")


def template_fields(template: str) -> list[str]:
    """The placeholders a template uses; ValueError when it is malformed (a lone brace)."""
    return [field for _, field, _spec, _conv in string.Formatter().parse(template) if field is not None]


def render_caption(template: str, *, trigger: str, class_word: str, caption: str | None = None,
                   legend: str | None = None, auto_caption: str | None = None,
                   doc: str = "", page: int = 0, picture: int | str = "", kind: str | None = None) -> str:
    """The caption for one image, on one line. `picture`: its 1-based number on the page (crop
    "pictures"), empty for a whole page; `kind` the picture's (engraving, halftone, ...), empty if unknown."""
    texts = {"caption": caption, "legend": legend, "auto_caption": auto_caption,
             "best_caption": best_caption(caption, legend, auto_caption)}
    text = template.format(trigger=trigger, doc=doc, page=page, picture=picture, kind=kind or "",
                           **{"class": class_word},
                           **{name: one_line(value or "") for name, value in texts.items()})
    parts = [one_line(part) for part in text.split(",")]
    return ", ".join(part for part in parts if part)


def one_line(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


def caption_for(item, settings) -> str:
    """The caption of one exported image (an `Item`) under `settings`."""
    return render_caption(settings.template, trigger=settings.trigger, class_word=settings.class_word,
                          caption=item.caption, legend=item.legend, auto_caption=item.auto_caption,
                          doc=pathlib.PurePath(item.doc).stem, page=page_number(item.page),
                          picture="" if item.picture is None else item.picture, kind=item.kind)
