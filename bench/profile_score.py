"""Where a page's time goes in the ingest worker, stage by stage, and how far its sigma is from the
reference render's, in process, on a fixed generated archive per resolution (and on the real scans).

Each page goes through what a worker does with it (score, legends, the image store shrunk), in one
thread as in a worker; the stages' CPU time is taken by wrapping the functions that do them:

- decode: the embedded JPEG to gray (libjpeg-turbo at full size, MuPDF's decoder where it reduces),
  or the page's render where it is not one plain JPEG
- resize: the decoded image brought to the reference size (144 dpi)
- features: the page analysis (content box, ink, pictures, hash)
- colour: a colour scan's preview decode
- thumbnail: the thumbnail's resize and JPEG encode
- legends: every picture's legend found and read

    python bench/profile_score.py [--dpi 200,300] [--pages 24] [--real] [--languages eng+deu+fra]
        [--readers tesseract,fallback,recognizer]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import pathlib
import sys
import time
from collections import defaultdict

import cv2
import pymupdf

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from curation.captions import legend  # noqa: E402
from curation.runs import ingest_task  # noqa: E402
from curation.scoring import scorer  # noqa: E402
from curation.sources.synthetic import periodical_specs, write_pdf  # noqa: E402

# CPU time of this process: what a page costs, less disturbed by whatever else the machine runs.
CLOCK = time.process_time
REAL = ROOT.parent / "shared" / "realdata"
STAGES = {  # stage: (module, function name) wrapped to time it
    "decode": [(scorer, "decode_gray"), (scorer, "_mupdf_decode_reduced"), (scorer, "_render_gray")],
    "resize": [(scorer, "reference_resize")],
    "features": [(scorer, "feature_columns")],
    "colour": [(scorer, "_colour_preview")],
    "thumbnail": [(scorer, "thumbnail_jpeg")],
    "legends": [(legend, "read_legends")],
}


@contextlib.contextmanager
def timed_stages(clock: dict[str, float]):
    """Wrap each stage's functions so their time adds up in `clock` (ms); nested calls count once."""
    originals = []
    depth = [0]

    def wrap(stage, function):
        def timed(*args, **kwargs):
            depth[0] += 1
            start = CLOCK()
            try:
                return function(*args, **kwargs)
            finally:
                depth[0] -= 1
                if depth[0] == 0:
                    clock[stage] += (CLOCK() - start) * 1000
        return timed

    for stage, targets in STAGES.items():
        for module, name in targets:
            if hasattr(module, name):
                originals.append((module, name, getattr(module, name)))
                setattr(module, name, wrap(stage, getattr(module, name)))
    try:
        yield
    finally:
        for module, name, function in originals:
            setattr(module, name, function)


def stage_split(paths, languages: str | None) -> tuple[dict[str, float], int]:
    """Milliseconds per page of each stage and of the whole, over every page of `paths`, and the pages."""
    cv2.setNumThreads(1)  # as in an ingest worker
    clock: dict[str, float] = defaultdict(float)
    pages = 0
    with timed_stages(clock):
        start = CLOCK()
        for path in paths:
            doc = pymupdf.open(path)
            for number in range(doc.page_count):
                ingest_task._score_and_shrink(doc, number, languages)
                pages += 1
            doc.close()
        clock["total"] = (CLOCK() - start) * 1000
    split = {stage: clock[stage] / pages for stage in (*STAGES, "total")}
    split["other"] = split["total"] - sum(split[s] for s in STAGES)
    return split, pages


def sigma_gaps(paths) -> list[float]:
    """sigma - sigma_ref for every page of `paths`."""
    gaps = []
    for path in paths:
        doc = pymupdf.open(path)
        for number in range(doc.page_count):
            result = scorer.score_page(doc, number)
            gaps.append(result.sigma - scorer.reference_sigma(doc[number]))
            pymupdf.TOOLS.store_shrink(100)
        doc.close()
    return gaps


def corpus(dpi: int, docs: int, pages: int) -> list[pathlib.Path]:
    folder = ROOT / "bench" / "out" / "profile" / f"{dpi}dpi-{docs}x{pages}"
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for d in range(docs):
        path = folder / f"periodical-{d:02d}.pdf"
        if not path.exists():
            write_pdf(path, periodical_specs(pages, seed=1000 + d, dpi=dpi))
        paths.append(path)
    return paths


def real_corpus() -> list[pathlib.Path]:
    """The real scans, one PDF of them per page at their own dpi (outside the repository's tracked files)."""
    folder = ROOT / "bench" / "out" / "profile" / "real"
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for line in (REAL / "labels.jsonl").read_text().splitlines():
        label = json.loads(line)
        path = folder / (pathlib.Path(label["file"]).stem + ".pdf")
        if not path.exists():
            jpeg = (REAL / "pages" / label["file"]).read_bytes()
            pix = pymupdf.Pixmap(jpeg)
            doc = pymupdf.open()
            page = doc.new_page(width=pix.w * 72 / label["dpi"], height=pix.h * 72 / label["dpi"])
            page.insert_image(page.rect, stream=jpeg)
            doc.save(path)
        paths.append(path)
    return paths


@contextlib.contextmanager
def counted_reads(reads: list[float]):
    """While open, the CPU time (ms) of each legend read (`legend.ocr`: one block of lines under or over a
    picture, read by Tesseract and, where it reads no legend, perhaps the recognizer) is added to `reads`."""
    ocr = legend.ocr

    def timed(*args, **kwargs):
        start = CLOCK()
        try:
            return ocr(*args, **kwargs)
        finally:
            reads.append((CLOCK() - start) * 1000)

    legend.ocr = timed
    try:
        yield
    finally:
        legend.ocr = ocr


def report(name: str, paths, languages: str | None, repeat: int) -> None:
    stage_split(paths[:1], languages)  # warm the caches, the libraries and the OCR engine
    reads: list[float] = []
    with counted_reads(reads):
        split, pages = min((stage_split(paths, languages) for _ in range(repeat)), key=lambda s: s[0]["total"])
    gaps = sigma_gaps(paths)
    print(f"{name}: {pages} pages, ms/page  " + "  ".join(f"{k} {v:.1f}" for k, v in split.items()))
    if reads:
        print(f"{name}: legend reader {legend.READER!r}: {len(reads) / repeat:.0f} blocks read, ms each: "
              f"mean {sum(reads) / len(reads):.1f}, largest {max(reads):.1f}")
    print(f"{name}: sigma - sigma_ref  largest {max(gaps, key=abs):+.3f}  mean {sum(gaps) / len(gaps):+.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dpi", default="200,300")
    parser.add_argument("--docs", type=int, default=2)
    parser.add_argument("--pages", type=int, default=12)
    parser.add_argument("--repeat", type=int, default=2, help="the fastest of this many passes is reported")
    parser.add_argument("--real", action="store_true", help="the real scans too (../shared/realdata)")
    parser.add_argument("--languages", default=legend.DEFAULT_LANGUAGES, help="legend languages; 'none': no legends")
    parser.add_argument("--readers", default=legend.READER,
                        help="legend readers to compare, comma-separated: tesseract, foreign, fallback, recognizer")
    args = parser.parse_args()
    languages = None if args.languages == "none" else args.languages
    for reader in args.readers.split(","):
        legend.READER = reader
        for dpi in (int(v) for v in args.dpi.split(",") if v):
            report(f"{dpi} dpi", corpus(dpi, args.docs, args.pages), languages, args.repeat)
        if args.real and REAL.exists():
            report("real scans", real_corpus(), languages, args.repeat)


if __name__ == "__main__":
    main()
