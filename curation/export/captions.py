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
# A caption is a prompt: CLIP reads 77 tokens of it (225 in sd-scripts' long mode), so 2,000 characters is far
# past any use; a longer one is refused rather than written into every caption file and the manifest.
MAX_CAPTION_CHARS = 2_000
MAX_TEMPLATE_CHARS = 1_000
_SPACES = re.compile(r"\s+")


class CaptionTooLong(ValueError):
    """A caption past MAX_CAPTION_CHARS; the message says which and how long, for a person."""


class TemplateRefused(ValueError):
    """A template too long, or with a field formatted (a width, a conversion); the message says which."""


def template_fields(template: str) -> list[str]:
    """The placeholders a template uses; ValueError when it is malformed (a lone brace) or when a field
    has a format spec or a conversion (`{caption:>100000000}` would make a 100 MB caption, `{page!r}`
    shows Python's repr): checked before anything is filled in, so nothing is allocated for it."""
    if len(template) > MAX_TEMPLATE_CHARS:
        raise TemplateRefused(f"the caption template is {len(template):,} characters long, more than "
                              f"{MAX_TEMPLATE_CHARS:,}")
    fields = []
    for _, field, spec, conversion in string.Formatter().parse(template):
        if field is None:
            continue
        if spec or conversion:
            extra = f"!{conversion}" if conversion else f":{spec}"
            raise TemplateRefused(f"{{{field}{extra}}} in the caption template has a format after its name; "
                                  f"placeholders take a name only, like {{{field}}}")
        fields.append(field)
    return fields


def render_caption(template: str, *, trigger: str, class_word: str, caption: str | None = None,
                   legend: str | None = None, auto_caption: str | None = None,
                   doc: str = "", page: int = 0, picture: int | str = "", kind: str | None = None) -> str:
    """The caption for one image, on one line. `picture`: its 1-based number on the page (crop
    "pictures"), empty for a whole page; `kind` the picture's (engraving, halftone, ...), empty if unknown."""
    texts = {"caption": caption, "legend": legend, "auto_caption": auto_caption,
             "best_caption": best_caption(caption, legend, auto_caption)}
    template_fields(template)  # names only: a width or a conversion is refused before it is filled in
    text = template.format(trigger=trigger, doc=doc, page=page, picture=picture, kind=kind or "",
                           **{"class": class_word},
                           **{name: one_line(value or "") for name, value in texts.items()})
    parts = [one_line(part) for part in text.split(",")]
    line = ", ".join(part for part in parts if part)
    if len(line) > MAX_CAPTION_CHARS:
        where = f"{doc} p. {page}" + (f" picture {picture}" if picture != "" else "")
        raise CaptionTooLong(f"the caption of {where} is {len(line):,} characters long, more than the limit of "
                             f"{MAX_CAPTION_CHARS:,}; shorten its caption, legend or model caption")
    return line


def one_line(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


def caption_for(item, settings) -> str:
    """The caption of one exported image (an `Item`) under `settings`."""
    return render_caption(settings.template, trigger=settings.trigger, class_word=settings.class_word,
                          caption=item.caption, legend=item.legend, auto_caption=item.auto_caption,
                          doc=pathlib.PurePath(item.doc).stem, page=page_number(item.page),
                          picture="" if item.picture is None else item.picture, kind=item.kind)
