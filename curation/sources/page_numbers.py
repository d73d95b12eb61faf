"""One page numbering for people: pages count from 1, as a PDF viewer counts them.

The manifest stores a page by its 0-based index in its PDF (what PyMuPDF reads); everything a person
reads or types (the app, the CLI's `pages` and `override`, file names in the export ZIP, its
manifest.csv, history) uses the page number. Convert at that edge, only here.
"""


def page_number(index: int) -> int:
    """The page number a person reads for the page stored at `index`."""
    return index + 1


def page_index(number: int) -> int:
    """The stored index of the page a person calls `number`."""
    return number - 1
