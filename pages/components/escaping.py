"""Text from people and files, shown literally: escaped for Markdown, as inline code, or as plain text
(`pictured`), with its control characters as their pictures, its invisible and reordering characters as their
code points, right-to-left text isolated, and the longest a text field takes (Streamlit renders Markdown
everywhere)."""

from __future__ import annotations

import re
import unicodedata

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


# Characters that show nothing, or that reorder the text around them: every format character (Unicode
# category Cf: the bidirectional embeddings, overrides and isolates U+202A-202E and U+2066-2069, the marks
# U+200E, U+200F and U+061C, zero-width spaces and joiners U+200B-200D, the word joiner U+2060, the byte order
# mark U+FEFF, the soft hyphen U+00AD, tags...) and the fillers that draw as blanks (the combining grapheme
# joiner, Hangul fillers, Khmer vowels inherent, Mongolian variation selectors). U+202E in a file name turned
# the dashboard's own words after it around ("46.51 sq in" read "ni qs 15.64"); U+200B made two names look alike.
INVISIBLE = re.compile("[\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160"
                       "\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f"
                       "\u3164\ufeff\uffa0\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
                       "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]")
# Letters and digits written right to left (Hebrew, Arabic, Arabic-Indic digits): beside them, the page's own
# numbers and punctuation would be drawn in their order. A text holding any is set apart as a first-strong
# isolate (U+2068 ... U+2069), which orders it within itself and leaves the text around it as it was.
RIGHT_TO_LEFT = {"R", "AL", "AN"}
ISOLATE, END_ISOLATE = "\u2068", "\u2069"


def code_point(match: re.Match) -> str:
    return f"\u27e8U+{ord(match[0]):04X}\u27e9"  # ⟨U+202E⟩


def pictured(text) -> str:
    """`text` as plain text that shows what it holds, on one line, in its own order: every control character
    and line break as its picture (␍, ␊), every invisible or reordering character as its code point
    (⟨U+202E⟩), and a text that holds right-to-left letters isolated from its neighbours.

    The plain-text counterpart of escape_markdown (which calls it): for what Streamlit draws as text, not
    Markdown: table cells (st.dataframe), the options of a select box, a chart's labels, a card's HTML."""
    text = INVISIBLE.sub(code_point, str(text).translate(CONTROL_PICTURES))
    if any(unicodedata.bidirectional(char) in RIGHT_TO_LEFT for char in text if ord(char) > 0x58f):
        return ISOLATE + text + END_ISOLATE
    return text


def pictured_table(table):
    """A table for st.dataframe (a pandas DataFrame, or rows as dicts) with every text in it, cells, column
    names and index labels, through `pictured`: a data frame draws its cells as plain text, and two file names
    that differ only by an invisible character must not look alike there either."""
    def shown(value):
        return pictured(value) if isinstance(value, str) else value

    if isinstance(table, list):
        return [{shown(key): shown(value) for key, value in row.items()} for row in table]
    table = table.map(shown).rename(columns=shown)
    return table.set_axis(table.index.map(shown).rename(table.index.name), axis=0)


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
    characters are shown as their pictures, invisible and reordering ones as their code points (`pictured`): a
    blank line would end the paragraph, and what follows it could begin a block of its own; U+202E would turn
    the page's own words after it around.
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
