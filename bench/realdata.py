"""Labelled real page images (laid out like ../shared/realdata) as the PDFs a scanning project publishes, for
the benchmarks that ingest them (quality_real, legend_quality, bench_learn_boxes)."""

from __future__ import annotations

import json
import pathlib

import PIL.Image
import pymupdf


def build(folder: pathlib.Path, corpus: pathlib.Path) -> dict[str, dict]:
    """One PDF per labelled page image (written once); the labels by PDF path."""
    corpus.mkdir(parents=True, exist_ok=True)
    labels = {}
    for line in (folder / "labels.jsonl").read_text().splitlines():
        label = json.loads(line)
        image = folder / "pages" / label["file"]
        pdf = (corpus / image.with_suffix(".pdf").name).resolve()
        if not pdf.exists():
            data = image.read_bytes()
            with PIL.Image.open(image) as picture:  # reads the header only
                width, height = picture.size
            with pymupdf.open() as doc:
                page = doc.new_page(width=width * 72 / label["dpi"], height=height * 72 / label["dpi"])
                page.insert_image(page.rect, stream=data)
                doc.save(pdf)
        labels[str(pdf)] = label
    return labels
