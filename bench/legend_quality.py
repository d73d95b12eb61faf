"""Legends on real pages, leave one source out: how well the legend reader reads the printed legends of
`pictures.jsonl`, and how many it reads where none is printed.

The reader's constants that were chosen by looking at these pages (`TUNED`: the confidence floor, the
characters a line of a title may hold) are selected here
for each source on the other sources, from a range, and the reader is measured on the held-out source
with them. The score a selection maximises, on the other sources' pages read both ways below: the
legends' summed character accuracy less one for each legend read where none is printed (a wrong legend
costs as much as a lost one); where several values score alike, the one nearest the middle of the range
(the report gives the range of values that scored alike). Measured twice per source:

- reader: each picture's legend read from its labelled box (what the reader does given the right picture);
- finder + reader: from the boxes the page analysis finds (as ingest reads them), each matched to the
  labelled picture it lies mostly inside; a legend under a picture the finder misses counts as unread.

Accuracy: printed characters read right (difflib's matching blocks, case kept) over printed characters.
The target (issue 39's decision) counts characters pooled over legends of at least MIN_LEGEND_CHARS characters:
a single letter or kana that keys a part of a figure is not a picture's legend, so it is neither expected nor,
read, counted as a legend read where none is printed (nor is any read shorter than that). Each line gives that
figure ("legends of 2+ characters") beside the ones over every legend; the targets: at least 0.85 from the
labelled boxes, and at most one legend read where none is printed. `--pictures network` (or `learned`) measures
the finder + reader through that finder's boxes, as an ingest with it reads them: legends follow the finder.
Each legend not read right says why: its picture not found (finder + reader), no block of lines found by the
picture (the legend's box; or the picture is under a square inch, where no legend is looked for), or what
Tesseract and the recognizer read in each block found (or the recognizer in a column of vertical type beside
the picture), with their confidences (the reader).

    python bench/legend_quality.py [FOLDER] [--languages eng+deu+fra] [--out bench/out/legends]
                                   [--pictures rules|network|learned]
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import functools
import itertools
import json
import pathlib
import sys
from dataclasses import dataclass, field

import numpy as np
import pymupdf

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from curation.captions import legend  # noqa: E402
from curation.runs.ingest_task import PICTURE_CHECKS  # noqa: E402
from curation.scoring.scorer import reference_size, score_page_and_scan  # noqa: E402

# The reader's constants chosen on these pages, each with the range it is selected from.
TUNED = {"MIN_CONFIDENCE": (0.45, 0.55, 0.65, 0.75, 0.85),
         "MAX_LINE_CHARS": (60, 75, 90, 120, 10_000),
         "RECOGNIZER_MIN_CONFIDENCE": (0.65, 0.75, 0.85, 0.9, 0.95),
         "BODY_ENDS_LEGEND": (False, True),
         "vertical.VERTICAL_MIN_CONFIDENCE": (0.65, 0.75, 0.85, 0.9, 0.95)}
MIN_LEGEND_CHARS = 2  # shorter, a printed or read "legend" is a letter keying a part of a figure: not counted
TARGET_ACCURACY, TARGET_INVENTED = 0.85, 1  # pooled over legends of MIN_LEGEND_CHARS+, from the labelled boxes


def counts_as_legend(text: str | None) -> bool:
    """A printed or read text is a picture's legend for the target: at least MIN_LEGEND_CHARS characters."""
    return bool(text) and len("".join(text.split())) >= MIN_LEGEND_CHARS


def accuracy_counts(read: str | None, printed: str) -> tuple[int, int]:
    """Printed characters read right (difflib's matching blocks, case kept), and how many were printed."""
    matcher = difflib.SequenceMatcher(None, read or "", printed, autojunk=False)
    return sum(block.size for block in matcher.get_matching_blocks()), len(printed)


@dataclass
class Page:
    pdf: str
    file: str
    source: str
    pictures: list[dict]  # as pictures.jsonl has them
    labelled: list[tuple[int, int, int, int]]  # their boxes in reference pixels
    found: list[tuple[int, int, int, int]]  # the boxes the page analysis finds


@dataclass
class Tally:
    right: int = 0
    printed: int = 0
    legends: int = 0
    accuracies: list[float] = field(default_factory=list)
    invented: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    lost: dict[str, int] = field(default_factory=dict)  # characters not read right, by why
    # The target's figures: legends of MIN_LEGEND_CHARS or more, characters pooled; reads of as many where none is
    right_long: int = 0
    printed_long: int = 0
    legends_long: int = 0
    invented_long: int = 0

    def add(self, other: "Tally") -> None:
        self.right += other.right
        self.printed += other.printed
        self.legends += other.legends
        self.accuracies += other.accuracies
        self.invented += other.invented
        self.lines += other.lines
        self.right_long += other.right_long
        self.printed_long += other.printed_long
        self.legends_long += other.legends_long
        self.invented_long += other.invented_long
        for why, count in other.lost.items():
            self.lost[why] = self.lost.get(why, 0) + count

    def score(self) -> float:
        return sum(self.accuracies) - len(self.invented)

    def line(self) -> str:
        mean = np.mean(self.accuracies) if self.accuracies else float("nan")
        return (f"legends {self.legends:2d}  character accuracy {self.right / max(self.printed, 1):.2f} "
                f"({self.right}/{self.printed})  mean per legend {mean:.2f}  read where none is printed "
                f"{len(self.invented)}" + "".join(f"; lost to {why} {n}" for why, n in sorted(self.lost.items())))

    def target_line(self) -> str:
        """The decided figures: characters pooled over legends of MIN_LEGEND_CHARS+, and such legends read where
        none is printed."""
        return (f"legends of {MIN_LEGEND_CHARS}+ characters {self.legends_long:2d}  characters pooled "
                f"{self.right_long / max(self.printed_long, 1):.2f} ({self.right_long}/{self.printed_long})  read "
                f"where none is printed {self.invented_long}")


def read_pages(folder: pathlib.Path, corpus: pathlib.Path, picture_finder: str = "rules") -> list[Page]:
    """The labelled pages with a picture, as one-page PDFs (quality_real.build), with the boxes `picture_finder`
    finds ("rules": the page analysis; "network", "learned": as an ingest with that finder)."""
    from realdata import build

    labels = build(folder, corpus)
    boxed = {json.loads(line)["file"]: json.loads(line)["pictures"]
             for line in (folder / "pictures.jsonl").read_text().splitlines()}
    pages = []
    for pdf, label in labels.items():
        pictures = boxed.get(label["file"], [])
        with pymupdf.open(pdf) as doc:
            width, height = reference_size(doc[0])
            scored, _ = score_page_and_scan(doc, 0, check_pictures=PICTURE_CHECKS.get(picture_finder))
        found = [tuple(p[:4]) for p in json.loads((scored.features or {}).get("pictures") or "[]")]
        if pictures or found:
            labelled = [tuple(round(v * s) for v, s in zip(p["box"], (width, height, width, height))) for p in pictures]
            pages.append(Page(pdf, label["file"], label["source"].split("@")[0], pictures, labelled, found))
    return pages


@contextlib.contextmanager
def remembered_reads():
    """While open, the reader remembers what it read (the page parts, where their legends lie, and the
    text Tesseract and the recognizer read), so that reading the pages again with other constants is quick."""
    read_area, read_text, recognize = legend.read_area, legend.read_text, legend.recognize
    read_column, scan_gray = legend.vertical.read_column, legend._scan_gray
    areas = functools.lru_cache(maxsize=None)(lambda *part: _area(read_area, scan_gray, *part))
    texts: dict = {}

    def remembered_text(gray, languages, dpi):
        key = (gray.shape, gray.tobytes(), languages, dpi)
        if key not in texts:
            texts[key] = read_text(gray, languages, dpi)
        return texts[key]

    def remembered_recognition(gray, dpi):
        key = (gray.shape, gray.tobytes(), "recognizer", dpi)
        if key not in texts:
            texts[key] = recognize(gray, dpi)
        return texts[key]

    def remembered_column(gray, pad):
        key = (gray.shape, gray.tobytes(), "column", pad)
        if key not in texts:
            texts[key] = read_column(gray, pad)
        return texts[key]

    legend_box, column_box = legend.legend_box, legend.column_box
    boxes: dict = {}

    def remembered_box(gray, strip, scale):  # the geometry: of the constants selected here, only one changes it
        key = (gray.shape, gray.tobytes(), strip, scale, legend.BODY_ENDS_LEGEND)
        if key not in boxes:
            boxes[key] = legend_box(gray, strip, scale)
        return boxes[key]

    legend.read_area = lambda doc, number, area, size, scan=None: areas(doc.name, number, tuple(area), tuple(size))
    legend._scan_gray = lambda doc, number: None  # the parts read are remembered: the page is not decoded
    legend.read_text, legend.recognize, legend.legend_box = remembered_text, remembered_recognition, remembered_box
    legend.vertical.read_column = remembered_column

    def remembered_column_box(gray, strip, scale):
        key = (gray.shape, gray.tobytes(), strip, scale)
        if key not in boxes:
            boxes[key] = column_box(gray, strip, scale)
        return boxes[key]

    legend.column_box = remembered_column_box
    try:
        yield
    finally:
        legend.read_area, legend.read_text, legend.recognize, legend.legend_box = (read_area, read_text, recognize,
                                                                                   legend_box)
        legend.vertical.read_column, legend.column_box, legend._scan_gray = read_column, column_box, scan_gray


def _area(read_area, scan_gray, path: str, number: int, area, size):
    """The part `area` of a page as the reader reads it from the page's scan (`scan_gray`; where the page is
    none, rendered)."""
    with pymupdf.open(path) as doc:
        return read_area(doc, number, area, size, scan_gray(doc, number))


def measure(page: Page, languages: str, finder: bool) -> Tally:
    """The reader's figures on one page, from the labelled boxes or (finder) from the found ones."""
    boxes = page.found if finder else page.labelled
    tally = Tally()
    with pymupdf.open(page.pdf) as doc, traced_reads() as traces:
        read = legend.read_legends(doc, 0, boxes, languages) if boxes else []
    # A list per picture and pass (under or over it, then beside it); none where no picture had a place to look
    traces = [sum(traces[i::len(boxes)], []) for i in range(len(boxes))] if boxes and len(traces) % len(boxes) == 0 \
        else [[] for _ in boxes]
    texts = [r.text if r else None for r in read]
    owners = [[i for i, box in enumerate(page.labelled) if _inside(b, box)] for b in boxes] if finder \
        else [[i] for i in range(len(boxes))]
    for i, picture in enumerate(page.pictures):
        if picture.get("legend"):
            got = " ".join(t for t, own in zip(texts, owners) if t and i in own) or None
            right, printed = accuracy_counts(got, picture["legend"])
            tally.right, tally.printed, tally.legends = tally.right + right, tally.printed + printed, tally.legends + 1
            tally.accuracies.append(right / printed)
            if counts_as_legend(picture["legend"]):
                tally.right_long, tally.printed_long = tally.right_long + right, tally.printed_long + printed
                tally.legends_long += 1
            mine = [traces[j] for j, own in enumerate(owners) if i in own]
            why, what = _loss(mine)
            lost = "" if right == printed else f"  lost: {why}{what}"
            if right < printed:
                tally.lost[why] = tally.lost.get(why, 0) + printed - right
            tally.lines.append(f"    {page.file[:36]:36s} {right / printed:4.0%}  printed {picture['legend'][:50]!r}"
                               f"  read {(got or '')[:60]!r}{lost}")
    for text, own, r in zip(texts, owners, read):
        if text and not any(page.pictures[i].get("legend") for i in own):
            kind = page.pictures[own[0]]["kind"] if own else "(no labelled picture)"
            tally.invented.append(f"    {page.file[:36]:36s} {kind:15s} {text[:80]!r} ({r.confidence:.2f})"
                                  + ("" if counts_as_legend(text) else " (too short to count)"))
        # The target's: a picture whose only printed text is a key letter has no legend to read
        if counts_as_legend(text) and not any(counts_as_legend(page.pictures[i].get("legend")) for i in own):
            tally.invented_long += 1
    return tally


@contextlib.contextmanager
def traced_reads():
    """While open, what the reader did for each picture, in order: a list per picture of the blocks it read
    (each: what Tesseract read and what the recognizer read, each with its confidence); an empty list where
    it found no block of lines to read (a picture under a square inch is not looked at)."""
    traces: list[list[tuple]] = []
    find, ocr, read_column = legend._legend, legend.ocr, legend.vertical.read_column

    def traced_find(*args, **kwargs):
        traces.append([])
        return find(*args, **kwargs)

    def traced_ocr(gray, languages, dpi):
        recognized = legend.recognize(gray, dpi) if legend.recognizer.available() else ("", 0.0, 0)
        traces[-1].append((legend.read_text(gray, languages, dpi)[:2], recognized[:2]))
        return ocr(gray, languages, dpi)

    def traced_column(gray, pad):  # a column beside the picture: the recognizer alone reads it, turned
        read = read_column(gray, pad)
        traces[-1].append((("(a column beside: not read)", 0.0), read))
        return read

    legend._legend, legend.ocr, legend.vertical.read_column = traced_find, traced_ocr, traced_column
    try:
        yield traces
    finally:
        legend._legend, legend.ocr, legend.vertical.read_column = find, ocr, read_column


def _loss(traces: list[list[tuple]]) -> tuple[str, str]:
    """Why a printed legend was not read right: its picture not found, no block of lines found by it (the
    legend's box), or the reader, with what each reader read in the blocks found."""
    if not traces:
        return "picture not found", ""
    blocks = [block for trace in traces for block in trace]
    if not blocks:
        return "no legend box (or the picture under a square inch)", ""
    return "reader", ": " + "; ".join(f"tesseract {t[0][:30]!r} ({t[1]:.2f}), recognizer {r[0][:30]!r} "
                                      f"({r[1]:.2f})" for t, r in blocks)


def _inside(box, labelled, grow: int = 20) -> bool:
    """At least half of `box` lies inside `labelled` grown by `grow` reference pixels."""
    x0, y0 = max(box[0], labelled[0] - grow), max(box[1], labelled[1] - grow)
    x1, y1 = min(box[2], labelled[2] + grow), min(box[3], labelled[3] + grow)
    return max(0, x1 - x0) * max(0, y1 - y0) >= 0.5 * (box[2] - box[0]) * (box[3] - box[1])


def with_constants(values: dict, pages: list[Page], languages: str, finder: bool) -> dict[str, Tally]:
    """Each source's tally, read with the reader's constants set to `values`."""
    for name, value in values.items():
        setattr(*_owner(name), value)
    tallies: dict[str, Tally] = {}
    for page in pages:
        tallies.setdefault(page.source, Tally()).add(measure(page, languages, finder))
    return tallies


def _owner(name: str) -> tuple:
    """The module that holds a tuned constant ("vertical.X": legend's neighbour), and its name there."""
    module, _, attribute = name.rpartition(".")
    return (getattr(legend, module) if module else legend), attribute


def select(scores: dict[tuple, float]) -> tuple:
    """The best-scoring combination of values; among equals, the one whose first value is nearest the
    middle of its range, then the second's, and so on."""
    best = max(scores.values())
    middle = [(len(values) - 1) / 2 for values in TUNED.values()]
    tied = [combo for combo, score in scores.items() if score >= best - 1e-9]
    return min(tied, key=lambda combo: tuple(abs(TUNED[name].index(v) - m) for name, v, m in zip(TUNED, combo, middle)))


def leave_one_source_out(pages: list[Page], languages: str) -> list[str]:
    """The report: per held-out source and pooled, the reader and the finder + reader, each with the
    constants selected on the other sources."""
    shipped = {name: getattr(*_owner(name)) for name in TUNED}
    combos = list(itertools.product(*TUNED.values()))
    by_combo = {combo: [with_constants(dict(zip(TUNED, combo)), pages, languages, finder) for finder in (False, True)]
                for combo in combos}
    sources = sorted({page.source for page in pages})
    report, pooled = [], {False: Tally(), True: Tally()}
    details = {False: [], True: []}
    for source in sources:
        scores = {combo: sum(t.score() for tallies in both for s, t in tallies.items() if s != source)
                  for combo, both in by_combo.items()}
        combo = select(scores)
        report.append(f"  {source[:40]:40s} selected on the others: {_choice(combo, scores)}")
        for finder in (False, True):
            tally = by_combo[combo][finder].get(source, Tally())
            pooled[finder].add(tally)
            details[finder] += tally.lines + tally.invented
            report.append(f"    {'finder + reader' if finder else 'reader         '} {tally.line()}")
            report.append(f"    {'':15s} {tally.target_line()}")
    for finder in (False, True):
        report.append(f"  pooled, {'finder + reader' if finder else 'reader'}: {pooled[finder].line()}")
        report.append(f"  pooled, {'finder + reader' if finder else 'reader'}: {pooled[finder].target_line()}")
    reader = pooled[False]
    report.append(f"  target (labelled boxes, legends of {MIN_LEGEND_CHARS}+ characters): characters pooled "
                  f"{reader.right_long / max(reader.printed_long, 1):.2f} (at least {TARGET_ACCURACY}), read where none "
                  f"is printed {reader.invented_long} (at most {TARGET_INVENTED})")
    for finder in (False, True):
        report.append(f"  each legend and each legend read where none is printed, "
                      f"{'finder + reader' if finder else 'reader (labelled boxes)'}:")
        report += details[finder]
    scores = {combo: sum(t.score() for tallies in both for t in tallies.values()) for combo, both in by_combo.items()}
    report.append(f"  selected on every source: {_choice(select(scores), scores)}; the reader ships with "
                  + ", ".join(f"{name} {value:g}" for name, value in shipped.items()))
    with_constants(shipped, [], languages, False)
    return report


def _choice(combo: tuple, scores: dict[tuple, float]) -> str:
    """The values chosen, each with the range of its values in the combinations that scored as well."""
    best = max(scores.values())
    tied = [c for c, score in scores.items() if score >= best - 1e-9]
    return ", ".join(f"{name} {value:g} (alike {min(c[i] for c in tied):g}-{max(c[i] for c in tied):g})"
                     for i, (name, value) in enumerate(zip(TUNED, combo)))


def report(folder: pathlib.Path, corpus: pathlib.Path, languages: str = "eng+deu+fra",
           readers: tuple[str, ...] = (legend.READER,), pictures: str = "rules") -> None:
    note = legend.engine_note()
    if note:
        print(note)
        return
    pages = read_pages(folder, corpus, pictures)
    shipped = legend.READER
    with remembered_reads():
        for reader in readers:
            legend.READER = reader
            print(f"legends on real pages, leave one source out ({folder}, {languages}), reader {reader!r}"
                  f"{' (as shipped)' if reader == shipped else ''}, finder {pictures!r}:")
            print("\n".join(leave_one_source_out(pages, languages)))
    legend.READER = shipped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", type=pathlib.Path, default=ROOT.parent / "shared" / "realdata")
    parser.add_argument("--languages", default="eng+deu+fra")
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "bench" / "out" / "legends")
    parser.add_argument("--readers", default=legend.READER,
                        help="comma-separated: tesseract (alone), foreign (the recognizer for a script Tesseract "
                             "lacks, or capitals where it sees no letters), fallback (the recognizer where "
                             "Tesseract reads no letters), recognizer (alone); each measured in turn")
    parser.add_argument("--pictures", choices=("rules", *PICTURE_CHECKS), default="rules",
                        help="the finder whose boxes the finder + reader figures read legends by (as ingest's "
                             "--pictures): rules (the page analysis), network or learned")
    args = parser.parse_args()
    if not (args.folder / "pictures.jsonl").exists():
        sys.exit(f"no pictures.jsonl in {args.folder}: give a folder like ../shared/realdata")
    report(args.folder, args.out / "corpus", args.languages, tuple(args.readers.split(",")), args.pictures)


if __name__ == "__main__":
    main()
