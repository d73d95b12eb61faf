"""The bound every caption is held to where it is written: a page's, a picture's, by any path (a typed caption,
a bulk caption, find and replace, the command line). No imports, so every writer can use it."""

from __future__ import annotations

# The longest caption stored, a page's or a picture's: typing stops there, and every edit that would write a
# longer one (find and replace, a bulk caption, the command line) is refused. Every visitor's Pictures view
# carries the captions it shows, so one caption without a bound would slow every page for everyone.
CAPTION_CHARS = 500


class CaptionTooLong(ValueError):
    """A caption past CAPTION_CHARS; the message says how long, for a person. Nothing was written."""


def stored_caption(text: str | None) -> str | None:
    """A caption as it is stored: trimmed, None when blank; CaptionTooLong past CAPTION_CHARS. Every write
    of a caption goes through here."""
    text = (text or "").strip()
    if len(text) > CAPTION_CHARS:
        raise CaptionTooLong(f"a caption of {len(text):,} characters is over the limit of {CAPTION_CHARS:,}; "
                             "nothing was written")
    return text or None
