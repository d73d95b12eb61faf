"""Curation library: score scanned periodical pages, keep the curator's decisions, export training sets."""

from .manifest.store import DEFAULT_THRESHOLD, Manifest, ManifestError
from .runs.ingest import ingest
from .scoring.scorer import reference_sigma, score_page

__all__ = ["DEFAULT_THRESHOLD", "Manifest", "ManifestError", "ingest", "reference_sigma", "score_page"]
