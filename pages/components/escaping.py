"""Text from people and files, shown literally: escaped for Markdown, as inline code, with its control
characters as their pictures, and the longest a text field takes (Streamlit renders Markdown everywhere)."""

from __future__ import annotations

import re

# Every text field takes at most so many characters (`max_chars`): the browser stops typing there, and
# Streamlit's server cuts whatever a hand-made message sends for the widget to the same length before a page
# reads it. A path is at most PATH_MAX long; a name, a file name's length on any file system.
MAX_PATH_CHARS = 4_096
MAX_NAME_CHARS = 255

# Line breaks and the other control characters, shown as their Unicode pictures (U+2400...: a carriage
# return as ␍, a line feed as ␊, a tab as ␉); the C1 controls and the Unicode line and paragraph separators
# as ␤ (U+2424, a new line). Markdown never sees a line break, so no text ends a paragraph, starts a block
# (a heading, a list, an indented code block) or closes a code span early.
CONTROL_PICTURES = {**{code: 0x2400 + code for code in range(0x20)}, 0x7F: 0x2421,
                    **{code: 0x2424 for code in (*range(0x80, 0xA0), 0x2028, 0x2029)}}


def pictured(text) -> str:
    """`text` with every control character and line break shown as its picture: one line, read as typed."""
    return str(text).translate(CONTROL_PICTURES)


MARKDOWN_SPECIAL = re.compile(r"([!-/:-@\[-`{-~])")  # every ASCII punctuation character
WWW = re.compile(r"(www)(?=\.)", re.IGNORECASE)
AFTER_COLON = re.compile(r":(?=[\w+/-])")


def escape_markdown(text) -> str:
    """`text` (a caption, a file name, a message quoting a file) as Markdown that shows it literally.

    Streamlit renders Markdown in st.markdown, captions, alerts, toasts, labels, help and image captions,
    with extras of its own (`:red[…]`, `:material/…:`, `$…$`): a caption holding `![x](http://…)` would
    make every visitor's browser fetch that image. CommonMark lets a backslash escape any ASCII
    punctuation, and Streamlit's extras are parsed the same way, so escaping all of it leaves nothing to
    interpret. Bare addresses (`http://…`, `www.…`, `a@b.c`) and shortcodes (`:material_home:`, `:smile:`)
    are found in the text after parsing, whatever the escapes: an invisible word joiner (U+2060) after a
    colon that a word or `/` follows, after `www` and before `@` stops that. Line breaks and other control
    characters are shown as their pictures (`pictured`): a blank line would end the paragraph, and what
    follows it could begin a block of its own.
    """
    text = AFTER_COLON.sub(":\u2060", WWW.sub("\\1\u2060", pictured(text))).replace("@", "\u2060@")
    return MARKDOWN_SPECIAL.sub(r"\\\1", text)


def code_span(text) -> str:
    """`text` as inline code (a path, a command): shown literally, in a fence of more backticks than it holds.

    A code span cannot hold a blank line (`x\r\r![y](https:…)`: the paragraph ends there and the rest is
    Markdown again), so line breaks and every other control character are shown as their pictures."""
    text = pictured(text)
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or text.startswith(" ") and text.endswith(" ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"
