"""CSV cells a spreadsheet shows as text, never runs as a formula.

A caption, a file name or a label written into a CSV is data, but Excel, LibreOffice and Google Sheets
take a cell that starts with `=`, `+`, `-` or `@` (and, after a tab or a carriage return, with anything)
as a formula: `=HYPERLINK("http://…", "click")` in a caption becomes a live link, or worse, in whoever
opens the export. Following OWASP's advice on CSV injection, such a cell gets a leading apostrophe, which
spreadsheets hide and show the rest as text. Plain numbers (`-3.5`, `+2`, `1e-3`) stay as they are, so
they still sort and sum as numbers.

A top-level module with no dependencies: both `curation` and `inference` write CSV, and neither imports
the other.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from numbers import Number

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
PLAIN_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def safe_cell(value):
    """`value` as a spreadsheet shows it as text: a formula-like string gets a leading apostrophe."""
    if value is None or isinstance(value, Number):
        return value
    text = str(value)
    if text.startswith(FORMULA_STARTS) and not PLAIN_NUMBER.fullmatch(text):
        return "'" + text
    return value


def safe_row(row: Iterable | Mapping):
    """Every cell of a row (a list for csv.writer, a dict for csv.DictWriter) through safe_cell."""
    if isinstance(row, Mapping):
        return {key: safe_cell(value) for key, value in row.items()}
    return [safe_cell(value) for value in row]
