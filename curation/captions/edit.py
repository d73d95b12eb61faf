"""The curator's captions of many pictures at once: find and replace, and a legend or a model's caption
copied into the caption.

Find and replace works on the pictures of a filter (`Pictures`: SQL over Manifest.picture_rows' aliases,
given picture ids, a document, the kept ones), with plain text (case-sensitive or not) or a regular
expression. `preview` lists every change and counts them without writing; `apply` writes the same changes
as one recorded action, which `undo` takes back in one step. Only the curator's caption is written: legends
(OCR) and model captions are read, never changed. With `shown`, the edit starts from the caption a picture
shows (the curator's, else its legend, else the model's; curation.captions.best), so a legend edited
becomes the picture's caption and the legend itself stays as it was printed.

Copying (`preview_copy`, `copy`, `use_legends`) puts a picture's legend or model caption into its caption;
a caption the curator typed is kept unless `overwrite` says otherwise.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import regex

from guards import patterns

from ..manifest.caption_limit import CAPTION_CHARS
from ..manifest.rules import KEEP_SQL, PICTURE_KEEP_SQL
from ..manifest.store import Manifest
from ..sources.page_numbers import page_number
from .best import caption_source, counted_sources

COPY_SOURCES = ("legend", "auto_caption")  # what may be copied into a caption
# A picture the export writes: it is kept, and so is its page.
KEPT_SQL = f"({PICTURE_KEEP_SQL}) = 1 AND ({KEEP_SQL}) = 1"
# A regular expression runs with a time limit: a pattern that backtracks without end ("(a|a)+$" over a
# caption of 30 a's) would otherwise hold a core, and the GIL, for minutes. A caption is one line, so a
# sane pattern takes microseconds on it; a whole edit over 100,000 captions takes well under a second.
PATTERN_SECONDS = 0.25  # one caption
EDIT_SECONDS = 10.0  # every caption of one edit together


class CaptionEditError(ValueError):
    """An edit that cannot be made (a pattern that is not a regular expression, nothing to find); the
    message says why, for a person. Nothing was written."""


@dataclass(frozen=True)
class Pictures:
    """Which pictures an edit reads: all of them (deleted ones never), narrowed by every field given.
    `where`: SQL over Manifest.picture_rows' aliases (x pictures, p pages, d documents, o overrides) with
    `params`, written by the program, never by a person; `ids`: these pictures; `doc_id`: one document's;
    `kept`: only what the export writes at `threshold` (None: the saved cutoff)."""

    where: str = ""
    params: dict = field(default_factory=dict)
    ids: tuple[int, ...] | None = None
    doc_id: int | None = None
    kept: bool = False
    threshold: float | None = None

    def sql(self) -> tuple[str, dict]:
        parts, params = [], dict(self.params)
        if self.where:
            parts.append(f"({self.where})")
        if self.ids is not None:
            parts.append("x.id IN (SELECT value FROM json_each(:edit_ids))")
            params["edit_ids"] = json.dumps([int(i) for i in self.ids])
        if self.doc_id is not None:
            parts.append("x.doc_id = :edit_doc_id")
            params["edit_doc_id"] = int(self.doc_id)
        if self.kept:
            parts.append(KEPT_SQL)
        return " AND ".join(parts), params

    def rows(self, manifest: Manifest) -> Iterable:
        where, params = self.sql()
        return manifest.picture_rows(self.threshold, where=where, params=params, deleted=False)

    @classmethod
    def of_view(cls, flt, threshold: float | None = None) -> "Pictures":
        """The pictures of a view of Review's Pictures (a curation.views.picture_views.PictureFilter: its
        decision at `threshold`, its document), as the view shows them."""
        where, params = flt.sql()
        return cls(where=where, params=params, threshold=threshold)


@dataclass(frozen=True)
class Change:
    """One picture's caption before and after."""

    picture_id: int
    doc: str  # the document's path
    page: int  # from 1, as a person reads it
    number: int  # the picture's number on its page
    old: str | None  # the text the edit started from: the curator's caption, or (shown, copy) the one shown
    new: str | None  # the curator's caption after; None: removed
    source: str | None = "caption"  # where `old` came from: caption, legend or auto_caption (None: nothing)

    def as_dict(self) -> dict:
        return {"picture_id": self.picture_id, "doc": self.doc, "page": self.page, "picture": self.number,
                "old": self.old, "new": self.new, "source": self.source}


@dataclass(frozen=True)
class Changes:
    """What an edit changes (a preview), or changed (`action`: the history action that `undo` takes)."""

    changes: list[Change]
    searched: int  # pictures the filter holds
    action: int | None = None

    @property
    def count(self) -> int:
        return len(self.changes)


# -- find and replace ---------------------------------------------------------------------------


def replacer(find: str, replacement: str, *, regex: bool = False, ignore_case: bool = False) -> Callable[[str], str]:
    """A function that makes the replacement in a text. Plain text is taken literally (the replacement
    too); a regular expression is Python's, bounded when compiled (guards.patterns), its replacement may
    name groups (\\1, \\g<name>). Both run with a time limit over the whole edit, a regular expression with
    one a caption too (CaptionEditError past either)."""
    if not find:
        raise CaptionEditError("give the text to find: it is empty")
    if len(replacement) > CAPTION_CHARS:
        raise CaptionEditError(f"the replacement is {len(replacement):,} characters long, over the limit of "
                               f"{CAPTION_CHARS:,} of a caption")
    flags = re.IGNORECASE if ignore_case else 0
    if not regex:
        if len(find) > patterns.MAX_PATTERN_CHARS:
            raise CaptionEditError(f"the text to find is {len(find):,} characters long, over the limit of "
                                   f"{patterns.MAX_PATTERN_CHARS:,}")
        pattern = re.compile(re.escape(find), flags)  # a literal: linear time a caption
        return _within_edit_time(find, lambda text: pattern.sub(lambda _: replacement, text))
    _checked(find, replacement, flags)
    return _time_limited(find, replacement, flags)


def _checked(find: str, replacement: str, flags: int) -> None:
    """Raise CaptionEditError when `find` is not a regular expression or not bounded (guards.patterns), or
    `replacement` does not fit it. Python's own parser judges both, so a pattern means what Python's
    documentation says it means."""
    try:
        pattern = patterns.checked(find, flags)
    except patterns.PatternRefused as exc:
        raise CaptionEditError(str(exc)) from None
    try:
        pattern.sub(replacement, "")  # the replacement's group references are checked here, before any caption
    except (re.error, IndexError) as exc:
        raise CaptionEditError(f"the replacement {replacement!r} does not fit the pattern: "
                               f"{patterns.error_message(exc)} (write \\\\ for a backslash)") from None


def _time_limited(find: str, replacement: str, flags: int) -> Callable[[str], str]:
    """The replacement run by the `regex` engine (Python's syntax, version 0), which stops a match past its
    `timeout` and lets other threads (other people's pages) run meanwhile. Only a pattern guards.patterns
    passed gets here; it is not kept in the engine's cache, so no pattern stays in memory past its edit."""
    try:
        pattern = regex.compile(find, regex.V0 | (regex.IGNORECASE if flags & re.IGNORECASE else 0),
                                cache_pattern=False)
    except regex.error as exc:
        raise CaptionEditError(f"{find!r} cannot be run here: {patterns.error_message(exc)}") from None
    deadline = time.monotonic() + EDIT_SECONDS

    def replace(text: str) -> str:
        left = min(PATTERN_SECONDS, deadline - time.monotonic())
        try:
            if left <= 0:
                raise TimeoutError
            return pattern.sub(replacement, text, timeout=left, concurrent=True)
        except TimeoutError:
            raise CaptionEditError(_too_slow(find, text)) from None

    return replace


def _within_edit_time(find: str, replace: Callable[[str], str]) -> Callable[[str], str]:
    """`replace`, stopped with CaptionEditError once the whole edit has run EDIT_SECONDS: a literal is
    linear in each caption, but an archive has many."""
    deadline = time.monotonic() + EDIT_SECONDS

    def within(text: str) -> str:
        if time.monotonic() > deadline:
            raise CaptionEditError(f"the edit took too long (more than {EDIT_SECONDS:g} s in all; it stopped at "
                                   f"{text[:60]!r}), so nothing was changed: narrow the pictures it searches")
        return replace(text)

    return within


def _too_slow(find: str, text: str) -> str:
    return (f"the pattern {find!r} took too long (more than {PATTERN_SECONDS:g} s on one caption, or "
            f"{EDIT_SECONDS:g} s in all; it stopped at {text[:60]!r}), so nothing was changed. Nested repeats "
            "such as (a+)+ or (a|a)+ try every way to split a text; write the pattern without them")


def preview(manifest: Manifest, find: str, replacement: str, pictures: Pictures = Pictures(), *,
            regex: bool = False, ignore_case: bool = False, shown: bool = False) -> Changes:
    """Every caption of `pictures` the replacement changes, in document order, without writing. With
    `shown`, a picture without a caption starts from its legend, else its model caption."""
    replace = replacer(find, replacement, regex=regex, ignore_case=ignore_case)
    changes, searched = [], 0
    for row in pictures.rows(manifest):
        searched += 1
        source = caption_source(*counted_sources(row)) if shown else "caption"  # a legend switched off: none
        old = row[source] if source else None
        if old is None or (edited := replace(old)) == old:
            continue
        new = (edited.strip() or None) if source == "caption" else _one_line(edited)
        if new != row["caption"] and not (new is None and source != "caption"):  # a blank cannot hide a legend
            changes.append(_change(row, old, new, source))
    return _within_bound(Changes(changes, searched))


def apply(manifest: Manifest, find: str, replacement: str, pictures: Pictures = Pictures(), **options) -> Changes:
    """Make the changes `preview` lists (same arguments), as one action; returns them with the action."""
    with manifest.recording("picture") as action:
        changes = preview(manifest, find, replacement, pictures, **options)
        return _write(manifest, changes, action)


# -- copying a legend or a model's caption ------------------------------------------------------


def preview_copy(manifest: Manifest, source: str, pictures: Pictures, *, overwrite: bool = False) -> Changes:
    """The captions copying `source` ("legend" or "auto_caption") into the caption would write: every picture
    of `pictures` that has one, except those with a caption of the curator's unless `overwrite`."""
    if source not in COPY_SOURCES:
        raise CaptionEditError(f"only a legend or a model's caption can be copied, not {source!r}")
    changes, searched = [], 0
    for row in pictures.rows(manifest):
        searched += 1
        new = _one_line(row[source] or "")
        if new is None or new == row["caption"] or (row["caption"] is not None and not overwrite):
            continue
        changes.append(_change(row, row[source], new, source))
    return _within_bound(Changes(changes, searched))


def copy(manifest: Manifest, source: str, picture_ids: Iterable[int], *, overwrite: bool = False) -> Changes:
    """Copy each picture's legend ("legend") or model caption ("auto_caption") into its caption, as one
    action (one click in Review). A typed caption is kept unless `overwrite`; a picture without that text
    is left as it is. Unknown or deleted pictures are an error, and nothing is written."""
    ids = tuple(int(i) for i in picture_ids)
    pictures = Pictures(ids=ids)
    found = {row["id"] for row in pictures.rows(manifest)}
    missing = [i for i in ids if i not in found]
    if missing:
        raise CaptionEditError(f"there is no picture {missing[0]} in this manifest (or it was deleted)")
    with manifest.recording("picture") as action:
        return _write(manifest, preview_copy(manifest, source, pictures, overwrite=overwrite), action)


def use_legends(manifest: Manifest, pictures: Pictures = Pictures(), *, overwrite: bool = False,
                dry_run: bool = False) -> Changes:
    """Use the legends as captions: every picture of `pictures` with a legend gets it as its caption,
    in one action; a typed caption is kept unless `overwrite`. `dry_run`: the changes, nothing written."""
    if dry_run:
        return preview_copy(manifest, "legend", pictures, overwrite=overwrite)
    with manifest.recording("picture") as action:
        return _write(manifest, preview_copy(manifest, "legend", pictures, overwrite=overwrite), action)


# -- shared -------------------------------------------------------------------------------------


def _write(manifest: Manifest, changes: Changes, action: int) -> Changes:
    manifest.set_picture_captions((change.picture_id, change.new) for change in changes.changes)
    return Changes(changes.changes, changes.searched, action if changes.count else None)


def _within_bound(changes: Changes) -> Changes:
    """`changes`, or CaptionEditError when any would write a caption past CAPTION_CHARS: the edit is refused
    whole (cutting a caption would write what nobody asked for), and the message says which and how long."""
    over = [change for change in changes.changes if change.new is not None and len(change.new) > CAPTION_CHARS]
    if not over:
        return changes
    first = over[0]
    where = f"picture {first.number} on p. {first.page} of {first.doc.replace(chr(92), '/').rsplit('/', 1)[-1]}"
    others = f" and {len(over) - 1:,} more" if len(over) > 1 else ""
    raise CaptionEditError(f"{len(over):,} caption{'s' if len(over) > 1 else ''} would pass the limit of "
                           f"{CAPTION_CHARS:,} characters ({where}: {len(first.new):,}{others}), so nothing was "
                           "changed; shorten the replacement or narrow the pictures")


def _one_line(text: str) -> str | None:
    """A legend or model caption as a caption: printed lines joined by a space, trimmed, None if blank."""
    return " ".join(text.split()) or None


def _change(row, old: str | None, new: str | None, source: str | None) -> Change:
    return Change(row["id"], row["doc"], page_number(row["page"]), row["number"], old, new, source)
