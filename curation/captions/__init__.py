"""Captions: what is said about each picture of a page.

`legend`: the picture's own printed legend, read by OCR (Tesseract through tesserocr) in the ingest
workers, kept beside the picture's box with the OCR's confidence.
"""

from .legend import (DEFAULT_LANGUAGES, INSTALL_HINT, Legend, check_languages, engine_note,
                     installed_languages, read_legends, with_legends)
