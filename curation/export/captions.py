"""Captions: one line per image from a template, e.g. "{trigger}, {class}, {best_caption}".

A picture has three captions: the curator's (`{caption}`: the picture's, else its page's), its printed
legend read by OCR (`{legend}`) and a captioning model's (`{auto_caption}`); `{best_caption}` is the first
of them that is not empty, the curator's winning (curation.captions.best); a legend or model caption the curator
switched off ("no legend") is empty. `{kind}` is the picture's kind (the curator's, else the picture job's
suggestion: curation.pictures.kind), and the class word where neither says one (the suggestion is left out
where its model is unsure). A whole-page image takes the legend, model
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
_COMMAS = re.compile(r"[\s,]*,[\s,]*")  # commas with the blanks around them: one comma in the line


class CaptionTooLong(ValueError):
    """A caption past MAX_CAPTION_CHARS; the message says which and how long, for a person."""


class TemplateRefused(ValueError):
    """A template too long, or with a field formatted (a width, a conversion); the message says which."""


def template_fields(template: str) -> list[str]:
    """The placeholders a template uses; ValueError when it is malformed (a lone brace) or when a field
    has a format spec or a conversion (`{caption:>100000000}` would make a 100 MB caption, `{page!r}`
    shows Python's repr): checked before anything is filled in, so nothing is allocated for it."""
    return template_parts(template)[1]


def template_parts(template: str) -> tuple[str, list[str]]:
    """(the template's own text, its placeholders in order), refused as template_fields says."""
    if len(template) > MAX_TEMPLATE_CHARS:
        raise TemplateRefused(f"the caption template is {len(template):,} characters long, more than "
                              f"{MAX_TEMPLATE_CHARS:,}")
    literal, fields = [], []
    for text, field, spec, conversion in string.Formatter().parse(template):
        literal.append(text)
        if field is None:
            continue
        if spec or conversion:
            extra = f"!{conversion}" if conversion else f":{spec}"
            raise TemplateRefused(f"{{{field}{extra}}} in the caption template has a format after its name; "
                                  f"placeholders take a name only, like {{{field}}}")
        fields.append(field)
    return "".join(literal), fields


def render_caption(template: str, *, trigger: str, class_word: str, caption: str | None = None,
                   legend: str | None = None, auto_caption: str | None = None,
                   doc: str = "", page: int = 0, picture: int | str = "", kind: str | None = None) -> str:
    """The caption for one image, on one line. `picture`: its 1-based number on the page (crop
    "pictures"), empty for a whole page; `kind` the picture's (engraving, halftone, ...): the class word where
    it is unknown."""
    texts = {"caption": caption, "legend": legend, "auto_caption": auto_caption,
             "best_caption": best_caption(caption, legend, auto_caption)}
    # names only: a width or a conversion is refused before it is filled in
    literal, fields = template_parts(template)
    values = {"trigger": trigger, "class": class_word, "doc": doc, "page": page, "picture": picture,
              "kind": kind or class_word, **{name: one_line(value or "") for name, value in texts.items()}}
    values = {name: compact(str(value)) for name, value in values.items()}
    where = f"{doc} p. {page}" + (f" picture {picture}" if picture != "" else "")
    # Its length is known before it is built: every character but blanks and commas stays in the line, so a
    # template that repeats a long part is refused without making its caption (111 {trigger}s of a million
    # characters each made 111 million). Once compact, what is built is at most about twice that long.
    solid = {name: solid_length(value) for name, value in values.items()}
    shortest = solid_length(compact(literal)) + sum(solid.get(field, 0) for field in fields)
    if shortest > MAX_CAPTION_CHARS:
        raise CaptionTooLong(f"the caption of {where} would be at least {shortest:,} characters long, more than "
                             f"the limit of {MAX_CAPTION_CHARS:,}; shorten its trigger word, class, caption, "
                             "legend or model caption, or use them fewer times in the template")
    text = template.format(**values)
    parts = [one_line(part) for part in text.split(",")]
    line = ", ".join(part for part in parts if part)
    if len(line) > MAX_CAPTION_CHARS:
        raise CaptionTooLong(f"the caption of {where} is {len(line):,} characters long, more than the limit of "
                             f"{MAX_CAPTION_CHARS:,}; shorten its caption, legend or model caption")
    return line


def compact(text: str) -> str:
    """`text` with each run of blanks one space, and each run of commas and blanks one comma: the caption's
    line comes out the same (its parts are split at commas, trimmed, and the empty ones dropped)."""
    return _COMMAS.sub(",", _SPACES.sub(" ", text))


def solid_length(compacted: str) -> int:
    """How many characters of `compacted` (a text through `compact`) are neither blank nor a comma: each of
    them stays in the caption."""
    return len(compacted) - compacted.count(" ") - compacted.count(",")


def one_line(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


def caption_for(item, settings) -> str:
    """The caption of one exported image (an `Item`) under `settings`."""
    return render_caption(settings.template, trigger=settings.trigger, class_word=settings.class_word,
                          caption=item.caption, legend=item.legend, auto_caption=item.auto_caption,
                          doc=pathlib.PurePath(item.doc).stem, page=page_number(item.page),
                          picture="" if item.picture is None else item.picture, kind=item.kind)
