"""An ingest `Task` and the worker side of it: what one task produces (a file's hash, a document's
inspection, a range of pages scored), run in a worker process. Workers are sent `run_task` by its module
path, so it and what it calls live here, at module level."""

from __future__ import annotations

import resource
from functools import partial
from dataclasses import dataclass, replace

import pymupdf

from ..captions.legend import with_legends
from ..pictures.embedding import encoded_inputs
from ..pictures.finder import found_columns
from ..pictures.verdict import checked_columns
from ..scoring.features import forget_page
from ..scoring.result import PageResult
from ..scoring.scorer import score_page_and_scan
from ..sources.reader import DocumentError, file_sha256, inspect_document, open_document, readable


@dataclass(frozen=True)
class Task:
    """Inspect a document (`pages` is None) or score the listed pages of it; with `hash`, hash the
    file and inspect it in one read where it is read (a cluster's worker), before it is a document.
    `roots`: the folders the file must really lie in when the worker opens it (None: no check).
    `legend_languages`: Tesseract's languages to read the pictures' legends in (None: none read).
    `picture_finder`: who finds the pictures: "rules" (the page analysis, part of scoring), "network" (the
    picture finder's network, curation.pictures.finder) or "learned" (the page analysis's candidates checked by
    the learned verdict, curation.pictures.verdict); `finder_weights`: the network's head where the manifest learned
    its own (curation.manifest.finders; None: the shipped head); `picture_judge`: the judge the manifest learned from its
    curator's decisions (picture_judge.Head.as_dict; None: the shipped one, if any). `embedding_inputs`: each picture's input to the picture job's network is cut
    from the decoded page and kept (the picture job follows this ingest, and need not read the page again).
    `score_min`: the manifest's score cutoff; a picture the finder scored under it (judged not a picture) gets no
    legend read (curation.captions.unread reads it when the picture is wanted). It gets its card all the same:
    Review's Pictures view shows such pictures, and a card cut on the click is a wait."""

    doc_id: int | None
    path: str
    pages: tuple[int, ...] | None = None
    hash: bool = False
    roots: tuple[str, ...] | None = None
    legend_languages: str | None = None
    picture_finder: str = "rules"
    embedding_inputs: bool = False
    finder_weights: bytes | None = None
    picture_judge: dict | None = None
    score_min: float | None = None


def run_task(task: Task):
    """Worker side: what one task produces. Runs in a worker process."""
    if task.hash:
        return file_sha256(task.path, roots=task.roots), run_task(replace(task, hash=False))
    if task.pages is None:
        try:
            return inspect_document(task.path, task.roots)
        except DocumentError as exc:
            return exc
    doc = open_document(task.path, task.roots)
    try:
        check = PICTURE_CHECKS.get(task.picture_finder)
        if (task.finder_weights is not None or task.picture_judge is not None) and task.picture_finder == "network":
            check = partial(found_columns, weights=task.finder_weights, judge=task.picture_judge)
        inputs = encoded_inputs if task.embedding_inputs else None
        return [_score_and_shrink(doc, number, task.legend_languages, check, inputs, task.score_min)
                for number in task.pages]
    finally:
        doc.close()


# The picture columns that replace the rule-based finder's, by who finds the pictures.
PICTURE_CHECKS = {"network": found_columns, "learned": checked_columns}


def _score_and_shrink(doc, number: int, legend_languages: str | None = None, check_pictures=None,
                      picture_inputs=None, score_min: float | None = None) -> PageResult:
    try:
        result, scan = score_page_and_scan(doc, number, check_pictures, picture_inputs)
        if legend_languages and result.status == "ok":
            result = with_legends(result, doc, legend_languages, scan, score_min)
        # Imported here: the export's package imports this module (its workers share the memory words).
        from ..export.card import with_picture_cards
        result = with_picture_cards(result, doc)
    finally:
        # MuPDF caches every image it touched (up to 256 MB per process); a page is never needed twice.
        pymupdf.TOOLS.store_shrink(100)
        forget_page()
    if result.status == "failed":
        return replace(result, error=memory_message() if out_of_memory(result.error) else readable(result.error))
    return result


def out_of_memory(text: str | None) -> bool:
    """MuPDF's and NumPy's words for an allocation the worker's memory limit refused."""
    return bool(text) and any(sign in text for sign in ("malloc (", "out of memory", "MemoryError", "Unable to allocate"))


def memory_message() -> str:
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    share = f" ({limit / (1 << 30):.1f} GB; --worker-memory)" if limit != resource.RLIM_INFINITY else ""
    return f"needed more memory than a worker may take{share}; skipped"
