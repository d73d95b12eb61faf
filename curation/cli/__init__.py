"""Command line: the same work as the dashboard, for headless batch runs and scripts.

Every command takes --db, the manifest (an SQLite file, default data/manifest.sqlite). Each module of this
package holds the commands of one part of the work, a thin layer over the library whose help text is the
documentation: runs (ingest, rescore, sample), inspection (status, docs, pages, pictures), decisions
(override, boxes, learn), settings, folders, captions (caption, captions), export, history (history, undo).
"""

from . import captions, decisions, export, folders, history, inspection, runs, settings  # noqa: F401  (they add the commands)
from .common import Size, cli

__all__ = ["Size", "cli"]
