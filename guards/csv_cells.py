"""CSV cells a spreadsheet shows as text, never runs as a formula.

A caption, a file name or a label written into a CSV is data, but Excel, LibreOffice and Google Sheets
take a cell that starts with `=`, `+`, `-` or `@` (and, after a tab or a carriage return, with anything)
as a formula: `=HYPERLINK("http://…", "click")` in a caption becomes a live link, or worse, in whoever
opens the export. Following OWASP's advice on CSV injection, such a cell gets a leading apostrophe, which
spreadsheets hide and show the rest as text. Plain numbers (`-3.5`, `+2`, `1e-3`) stay as they are, so
they still sort and sum as numbers.

A line break inside a cell starts a new line in the file, which some readers take for a new row and
others, spreadsheets among them, start a formula from. Python's csv module quotes a cell only for the
characters of its own line terminator (`\n` here), so a bare carriage return went out unquoted: the
writers here write a row holding a line break fully quoted, every line of a cell gets the formula guard,
and the other control characters (a vertical tab, a form feed, U+2028…, which readers also count as line
breaks) are replaced by U+FFFD. A tab inside a cell is a cell break to whatever reads the file, or a
paste of it, as tab-separated: it is treated as a line break is (the row fully quoted, what follows it
guarded).

A top-level module with no dependencies: both `curation` and `inference` write CSV, and neither imports
the other.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Mapping
from numbers import Number

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
PLAIN_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
LINE_BREAK = re.compile(r"(\r\n|\r|\n|\t)")  # and a tab, which tab-separated readers break a cell at
# Control characters but tab, CR and LF, and what str.splitlines also breaks at (NEL, U+2028, U+2029).
CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029]")
REPLACEMENT = "\ufffd"


def safe_cell(value):
    """`value` as a spreadsheet shows it as text: a formula-like string gets a leading apostrophe, and so
    does each line of it after a line break or a tab; control characters other than tab and line breaks
    are replaced by U+FFFD."""
    if value is None or isinstance(value, Number):
        return value
    text = CONTROL.sub(REPLACEMENT, str(value))
    lines = LINE_BREAK.split(text)  # line, break, line, break, ..., line
    lines[2::2] = [_guarded(line) for line in lines[2::2]]
    safe = ("'" if _formula(text) else "") + "".join(lines)  # the cell's start: a carriage return counts
    return value if safe == str(value) else safe


def _formula(line: str) -> bool:
    return line.startswith(FORMULA_STARTS) and not PLAIN_NUMBER.fullmatch(line)


def _guarded(line: str) -> str:
    return "'" + line if _formula(line) else line


def safe_row(row: Iterable | Mapping):
    """Every cell of a row (a list for csv.writer, a dict for csv.DictWriter) through safe_cell."""
    if isinstance(row, Mapping):
        return {key: safe_cell(value) for key, value in row.items()}
    return [safe_cell(value) for value in row]


def _breaks_line(row: Iterable) -> bool:
    return any(isinstance(value, str) and LINE_BREAK.search(value) for value in row)


class SafeWriter:
    """csv.writer that writes every row through safe_row, and a row holding a line break fully quoted."""

    def __init__(self, out, **options):
        self._plain = csv.writer(out, **options)
        self._quoted = csv.writer(out, **{**options, "quoting": csv.QUOTE_ALL})

    def writerow(self, row: Iterable):
        row = safe_row(row)
        return (self._quoted if _breaks_line(row) else self._plain).writerow(row)

    def writerows(self, rows: Iterable[Iterable]) -> None:
        for row in rows:
            self.writerow(row)


class SafeDictWriter:
    """csv.DictWriter as SafeWriter: rows through safe_row, a row holding a line break fully quoted."""

    def __init__(self, out, fieldnames, **options):
        self._plain = csv.DictWriter(out, fieldnames, **options)
        self._quoted = csv.DictWriter(out, fieldnames, **{**options, "quoting": csv.QUOTE_ALL})

    def writeheader(self):
        return self._plain.writeheader()

    def writerow(self, row: Mapping):
        row = safe_row(row)
        return (self._quoted if _breaks_line(row.values()) else self._plain).writerow(row)

    def writerows(self, rows: Iterable[Mapping]) -> None:
        for row in rows:
            self.writerow(row)
