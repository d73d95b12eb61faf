"""A small synthetic archive, so a new user can try the whole workflow without PDFs of their own.

`python -m curation sample --db DB` (or `python -m curation.runs.sample`) writes a few synthetic periodical issues into the manifest's
folder (`data/sample/`) and ingests them. It runs as its own process, registered in the manifest's
jobs table as kind "sample" while it writes, then as an ordinary "ingest" job, so the dashboard shows
its progress like any other job and a rerun or a closed tab does not stop it. About 60 pages: it is
written and scored in well under a minute on two cores.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import pathlib
import subprocess
import sys

import numpy as np

from ..manifest.store import JobRunning, Manifest
from ..scoring.result import PageResult
from . import jobs
from ..sources.paths import add_source, data_dir
from ..sources.synthetic import PageSpec, periodical_specs, write_pdf

KIND = "sample"
DOCUMENTS = 4
PAGES = 16
DPI = 100  # low enough to write quickly, high enough that σ behaves as on real scans
SEED = 1885
# Hard cases every sample shows, whatever the seed draws: (document, page) -> what to draw there.
HARD_CASES = {
    (0, 1): {"kind": "faded_engraving"},  # a real illustration whose σ falls among text pages
    (0, 2): {"kind": "text", "border": True, "bleed": True},  # text lifted toward engraving σ
    (1, 3): {"kind": "mixed"},
    (2, 0): {"kind": "engraving", "border": True},
    (3, 5): {"kind": "blank"},
}
# Plates reprinted in a later issue, as periodicals did: (document, page) -> the (document, page) reprinted.
# The Review page's Near-duplicates filter shows them as one group.
REPRINTS = {(3, 9): (2, 3)}


def sample_folder(db: str | os.PathLike) -> pathlib.Path:
    return data_dir(db) / "sample"


def sample_specs(documents: int = DOCUMENTS, pages: int = PAGES, seed: int = SEED,
                 dpi: int = DPI) -> list[list[PageSpec]]:
    """Page specs for each sample document: the founding archive's proportions plus the hard cases."""
    specs = []
    for d in range(documents):
        doc = list(periodical_specs(pages, seed=seed * 1000 + d, dpi=dpi))
        for (doc_number, page), changes in HARD_CASES.items():
            if doc_number == d and page < pages:
                doc[page] = dataclasses.replace(doc[page], **changes)
        specs.append(doc)
    for (doc_number, page), (source_doc, source_page) in REPRINTS.items():
        if doc_number < documents and page < pages and source_doc < documents and source_page < pages:
            specs[doc_number][page] = specs[source_doc][source_page]
    return specs


def drawn(doc: list[PageSpec], done: int, total: int, on_page):
    """The pages of `doc`, reporting each as written (when the next is asked for): progress moves page by page,
    not a whole issue at a time."""
    for n, spec in enumerate(doc):
        if n:
            on_page(done + n, total)
        yield spec


def write_sample(folder: pathlib.Path, specs: list[list[PageSpec]], on_page=lambda done, total: None,
                 should_stop=lambda: False) -> list[pathlib.Path]:
    """Write the sample PDFs; ones already there are kept, so a stopped run resumes.

    Each file is written under a temporary name and renamed when complete: ingest never sees half a PDF.
    """
    folder.mkdir(parents=True, exist_ok=True)
    total, done, written = sum(len(doc) for doc in specs), 0, []
    on_page(0, total)
    for number, doc in enumerate(specs):
        path = folder / f"sample-issue-{number + 1:02d}.pdf"
        if not path.exists():
            if should_stop():
                break
            partial = write_pdf(folder / f".{path.name}.part", drawn(doc, done, total, on_page))
            os.replace(partial, path)
        written.append(path)
        done += len(doc)
        on_page(done, total)
    return written


def launch(db: str | os.PathLike, *args: str) -> subprocess.Popen:
    """Start `python -m curation sample ARGS --db DB` detached, as jobs.launch starts every job."""
    return jobs.launch(db, KIND, *args)


def run(db: str | os.PathLike, documents: int = DOCUMENTS, pages: int = PAGES, dpi: int = DPI,
        workers: int | None = None) -> int:
    """Write the sample archive under a "sample" job, then ingest it. Returns a process exit code."""
    from ..runs.ingest import Ingest  # the process pool is only needed here

    folder = sample_folder(db)
    with Manifest(db) as manifest:
        if manifest.running_job("ingest") is not None:
            print("an ingest job is running on this manifest; try the sample when it is done", file=sys.stderr)
            return 1
        try:
            job_id = manifest.start_job(KIND, {"paths": [str(folder)]})
        except JobRunning as exc:
            print(exc, file=sys.stderr)
            return 1
        status, message = "failed", None
        try:
            specs = sample_specs(documents, pages, dpi=dpi)
            written = write_sample(
                folder, specs,
                on_page=lambda done, total: manifest.update_job(job_id, done=done, total=total),
                should_stop=lambda: manifest.stop_requested(job_id),
            )
            stopped = len(written) < len(specs)
            status = "stopped" if stopped else "done"
            message = f"wrote {len(written)} of {len(specs)} sample documents to {folder}"
        except Exception as exc:
            message = f"could not write the sample archive: {exc}"
            raise
        finally:
            manifest.finish_job(job_id, status, message)
        if status != "done":
            return 130
        add_source(manifest, folder)  # so Start on the Ingest page resumes it like any archive
        report = Ingest(manifest, [folder], workers=workers).run()
        print(f"sample: {report.pages_scored} pages scored, {report.pages_failed} failed")
        if report.stopped:
            return 130
        return embed_pictures_after(manifest)


def embed_pictures_after(manifest: Manifest) -> int:
    """The picture job after the sample's ingest, as after any ingest (where the setting wants it and it can
    run here; where it cannot, one line says what to install). Returns a process exit code."""
    if not manifest.picture_job:
        return 0
    from .embed import PictureJob, not_here_note

    note = not_here_note()
    if note:
        print(note, file=sys.stderr)
        return 0
    try:
        report = PictureJob(manifest).run()
    except JobRunning as exc:  # that job embeds these pictures too
        print(exc, file=sys.stderr)
        return 0
    print(f"sample: {report.summary()}")
    return 130 if report.stopped else 0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m curation.runs.sample", description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", default=os.environ.get("CURATION_DB", "data/manifest.sqlite"))
    parser.add_argument("--documents", type=int, default=DOCUMENTS)
    parser.add_argument("--pages", type=int, default=PAGES)
    parser.add_argument("--dpi", type=int, default=DPI)
    parser.add_argument("--workers", type=int, default=None)
    args = parser.parse_args(argv)
    sys.exit(run(args.db, args.documents, args.pages, args.dpi, args.workers))


if __name__ == "__main__":
    main()


# -- manifests without PDFs, for tests and benchmarks -----------------------------------------------


def fill_manifest(manifest: Manifest, documents: int, pages: int, seed: int = 0, folder: str = "/archive",
                  thumbnails: list[bytes] | None = None, sigmas: list[float] | None = None) -> list[int]:
    """Insert documents and scored pages straight into a manifest, without PDFs or scoring.

    σ is drawn like the founding archive (about 70 % text pages around 25, illustrations around 60)
    unless `sigmas` gives every page's value in order. Thumbnails, when given, are used in turn.
    Returns the new documents' ids. A 100,000-page manifest takes seconds.
    """
    rng = np.random.default_rng(seed)
    total = documents * pages
    if sigmas is None:
        text = rng.random(total) < 0.7
        sigmas = np.where(text, rng.normal(25, 6, total), rng.normal(60, 12, total)).clip(3, 120).tolist()
    ids = []
    for d in range(documents):
        path = f"{folder}/issue-{seed:03d}-{d:04d}.pdf"
        doc = manifest.register_document(f"{seed:08x}{d:056x}", path, 1_000_000)
        manifest.set_document(doc["id"], status="ok", pages=pages)
        results = (
            PageResult(page=n, status="ok", sigma=float(sigmas[d * pages + n]), width=1224, height=1584,
                       method="jpeg", thumbnail=thumbnails[(d * pages + n) % len(thumbnails)] if thumbnails else None)
            for n in range(pages)
        )
        manifest.save_pages(doc["id"], results)
        ids.append(doc["id"])
    return ids
