"""Curation library: score scanned periodical pages, keep the curator's decisions, export training sets."""

from .ingest import ingest
from .manifest import DEFAULT_THRESHOLD, Manifest, ManifestError
from .scorer import reference_sigma, score_page

__all__ = ["DEFAULT_THRESHOLD", "Manifest", "ManifestError", "ingest", "reference_sigma", "score_page"]
