"""What an export produces: image shape and quality, captions, layout. One frozen value, checked once."""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from dataclasses import dataclass

from .captions import (MAX_CAPTION_CHARS, PLACEHOLDERS, CaptionTooLong, TemplateRefused, render_caption,
                       template_fields)

MODES = ("square", "bucket")
FITS = ("pad", "crop", "stretch")
LAYOUTS = ("kohya", "folder", "diffusers")
# The layouts whose trainer reads masks as the export writes them, unasked: sd-scripts (kohya) with --masked_loss.
# The folder layout serves ai-toolkit too, which would take OneTrainer's -masklabel.png files for training images.
MASKED_LAYOUTS = ("kohya",)
# page: the whole page; picture: cut to the illustration's bounding box; pictures: each picture of a page
# its own image
CROPS = ("page", "picture", "pictures")
DUPLICATES = ("one", "all")  # one: a single page per group of near-identical plates; all: every kept page
MIN_SIZE, MAX_SIZE = 64, 4096
MIN_BUCKET_SIDE = 256  # the smallest bucket side, as sd-scripts' min_bucket_reso
MIN_BUCKET_AREA_SIDE = 512  # a bucket area smaller than this² leaves too few buckets to choose from
HEX_COLOUR = re.compile(r"^#[0-9a-fA-F]{6}$")
UNPRINTABLE = ("Cc", "Zl", "Zp")  # Unicode categories: control characters, line and paragraph separators

# A trigger word or class is a word or two of a prompt; each is written into every caption and, for kohya, the
# image folder's name.
MAX_WORD_CHARS = 100
DEFAULT_TRIGGER = "ohwx"  # a rare token, the kohya convention; curators set their own
DEFAULT_CLASS = "engraving"
# {best_caption}: the curator's caption, else the printed legend, else the model's (curation.export.captions)
DEFAULT_TEMPLATE = "{trigger}, {class}, {best_caption}"


class SettingsError(ValueError):
    """An export option that cannot work; the message says which and why."""


@dataclass(frozen=True)
class ExportSettings:
    """How kept pages become a training set. Defaults: each picture cut apart, as the original method sized
    its images (1024², JPEG 92), padded."""

    mode: str = "square"  # square: SIZE x SIZE; bucket: aspect kept, snapped to an SDXL bucket
    fit: str = "pad"  # square only: pad (whole page on paper colour), crop (centre), stretch (the original)
    size: int = 1024
    quality: int = 92
    layout: str = "kohya"
    trigger: str = DEFAULT_TRIGGER
    class_word: str = DEFAULT_CLASS
    template: str = DEFAULT_TEMPLATE
    repeats: int = 10  # kohya: how often each image is seen per epoch
    pad_colour: str = "paper"  # "paper" (estimated per page) or "#rrggbb"
    # pictures (one image per picture: the picture is the training set's unit), picture (each page cut to its
    # largest) or page (the whole page, text columns and all)
    crop: str = "pictures"
    duplicates: str = "one"  # one: the best page of each near-duplicate group; all: every kept page
    # Images whose source has fewer pixels than this on its short side are left out (0: none): enlarged 2.5-3.5
    # times to 1024 px, a small cut comes out soft.
    min_source_side: int = 0
    # Each image's mask (curation.export.layouts.mask_file): None writes them where the layout's trainer reads
    # them unasked (MASKED_LAYOUTS).
    masks: bool | None = None

    def __post_init__(self):
        self.check()

    def check(self) -> None:
        if self.mode not in MODES:
            raise SettingsError(f"mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        if self.fit not in FITS:
            raise SettingsError(f"fit must be one of {', '.join(FITS)}, not {self.fit!r}")
        if self.crop not in CROPS:
            raise SettingsError(f"crop must be one of {', '.join(CROPS)}, not {self.crop!r}")
        if self.duplicates not in DUPLICATES:
            raise SettingsError(f"duplicates must be one of {', '.join(DUPLICATES)}, not {self.duplicates!r}")
        if self.layout not in LAYOUTS:
            raise SettingsError(f"layout must be one of {', '.join(LAYOUTS)}, not {self.layout!r}")
        if not MIN_SIZE <= self.size <= MAX_SIZE:
            raise SettingsError(f"size must be between {MIN_SIZE} and {MAX_SIZE} pixels, not {self.size}")
        if self.mode == "bucket" and self.size < MIN_BUCKET_AREA_SIDE:
            raise SettingsError(f"bucket mode needs a size of at least {MIN_BUCKET_AREA_SIDE} pixels")
        if not 1 <= self.quality <= 100:
            raise SettingsError(f"JPEG quality must be between 1 and 100, not {self.quality}")
        if not 0 <= self.min_source_side <= MAX_SIZE * 4:
            raise SettingsError(f"the minimum source size must be between 0 and {MAX_SIZE * 4} pixels, "
                                f"not {self.min_source_side}")
        if not 1 <= self.repeats <= 10_000:
            raise SettingsError(f"repeats must be between 1 and 10000, not {self.repeats}")
        if not self.trigger.strip():
            raise SettingsError("the trigger word must not be empty: it is how prompts call the trained style")
        _check_one_line("trigger word", self.trigger)
        _check_one_line("class word", self.class_word)
        for what, text in (("trigger word", self.trigger), ("class word", self.class_word)):
            if len(text) > MAX_WORD_CHARS:
                raise SettingsError(f"the {what} is {len(text):,} characters long, more than {MAX_WORD_CHARS}")
        if self.pad_colour != "paper" and not HEX_COLOUR.match(self.pad_colour):
            raise SettingsError(f"pad colour must be 'paper' or #rrggbb, not {self.pad_colour!r}")
        _check_template(self.template, self.trigger, self.class_word)

    @property
    def writes_masks(self) -> bool:
        """Whether each image gets a mask beside it (see `masks`)."""
        return self.layout in MASKED_LAYOUTS if self.masks is None else bool(self.masks)

    @property
    def shape(self) -> str:
        """A short name for the image shape, as people say it: 'square pad', 'bucket'."""
        return "bucket" if self.mode == "bucket" else f"square {self.fit}"

    def cli_args(self) -> list[str]:
        """These settings as `python -m curation export` options, for the app's job and for people."""
        return ["--layout", self.layout, "--mode", self.mode, "--fit", self.fit, "--size", str(self.size),
                "--quality", str(self.quality), "--trigger", self.trigger, "--class", self.class_word,
                "--template", self.template, "--repeats", str(self.repeats), "--pad-colour", self.pad_colour,
                "--crop", self.crop, "--duplicates", self.duplicates, "--min-source", str(self.min_source_side),
                *([] if self.masks is None else ["--masks" if self.masks else "--no-masks"])]

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> ExportSettings:
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in known})


def _check_one_line(what: str, text: str) -> None:
    """Refuse control characters and line breaks: they end up in a folder name, in every caption and in
    kohya's dataset.toml, where TOML forbids most of them; a person cannot see or type them on purpose."""
    for char in text:
        if unicodedata.category(char) in UNPRINTABLE:
            name = unicodedata.name(char, "a control character")
            raise SettingsError(f"the {what} must not hold control characters or line breaks: it holds "
                                f"U+{ord(char):04X} ({name.lower()}); type it again without it")


def _check_template(template: str, trigger: str = DEFAULT_TRIGGER, class_word: str = DEFAULT_CLASS) -> None:
    """The template's placeholders, and its captions' length with this trigger and class: refused here,
    before any caption is built, when the template's own parts already make every caption too long."""
    try:
        fields = template_fields(template)
    except TemplateRefused as exc:
        raise SettingsError(str(exc)) from None
    except ValueError as exc:
        raise SettingsError(f"caption template {template!r} is malformed: {exc} (write {{{{ or }}}} for a brace)") from exc
    unknown = [field or "{}" for field in fields if field not in PLACEHOLDERS]
    if unknown:
        allowed = ", ".join("{" + name + "}" for name in PLACEHOLDERS)
        raise SettingsError(f"unknown placeholder {{{unknown[0]}}} in the caption template; use {allowed}")
    if "trigger" not in fields:
        raise SettingsError("the caption template must contain {trigger}: it is how prompts call the trained style")
    try:
        render_caption(template, trigger=trigger, class_word=class_word, caption="x", legend="l", auto_caption="a",
                       doc="d", page=0, picture=1)
    except CaptionTooLong:
        raise SettingsError(f"with this trigger word and class, the caption template makes every caption longer "
                            f"than the limit of {MAX_CAPTION_CHARS:,} characters; use them fewer times") from None
    except (ValueError, IndexError, KeyError) as exc:  # whatever else str.format refuses
        raise SettingsError(f"caption template {template!r} cannot be filled in: {exc}") from exc
