"""What the picture finders cost, per page (and the learned verdict per candidate), beside the rule-based finder.

Pages are generated periodical pages (curation.sources.synthetic, mixed kinds) at 144 dpi, the
resolution the analysis runs at, or the real pages of a folder laid out like ../shared/realdata. For
each page: the rule-based page analysis alone (the reference: what ingest does without the verdict),
then the learned verdict's stages: the text detector, the candidates and their measures, the head, the kept
pictures' boxes (tightened and given their margin, curation.pictures.boxes). Apart from
the verdict, what the picture job pays for each picture it embeds (curation.pictures.embedding), measured on
the candidates' crops (CPU, and the GPU where torch sees one). Then the picture network's stages
(curation.pictures.finder), on one core as in an ingest worker (torch on one thread): the page brought to the
network's input, the network (encoder and head), the boxes fitted to the pictures' ink (which includes the page
analysis the fitting reads). Prints median and mean milliseconds of CPU.

With --newspapers, only the real pages at least the finder's LARGE_IN long (newspapers, read at its large side):
the finder's mean cost on an archive of newspaper pages.

    python bench/bench_pictures.py [--pages 20] [--real ../shared/realdata] [--newspapers] [--finder-only]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys
import time

import cv2
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from curation.pictures import boxes, candidates, embedding, text  # noqa: E402
from curation.pictures.train import at_reference  # noqa: E402
from curation.pictures.verdict import select, shipped_head  # noqa: E402
from curation.scoring.features import analyse_page, page_features  # noqa: E402
from curation.sources.synthetic import PageSpec, page_image  # noqa: E402

KINDS = ("text", "engraving", "mixed", "faded_engraving", "ornament")


def generated(count: int) -> list[np.ndarray]:
    pages = []
    for n in range(count):
        rgb = page_image(PageSpec(kind=KINDS[n % len(KINDS)], seed=n, dpi=144, border=n % 3 == 0, bleed=n % 4 == 1))
        pages.append(cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY))
    return pages


def real(folder: pathlib.Path, count: int, newspapers: bool = False) -> list[np.ndarray]:
    """The first `count` real pages at the reference resolution (`newspapers`: of those at least LARGE_IN long)."""
    from curation.pictures.finder import LARGE_IN

    labels = [json.loads(line) for line in (folder / "labels.jsonl").read_text().splitlines() if line.strip()]
    pages = []
    for label in labels:
        gray = cv2.imread(str(folder / "pages" / label["file"]), cv2.IMREAD_GRAYSCALE)
        if not newspapers or max(gray.shape) / label["dpi"] >= LARGE_IN:
            pages.append(at_reference(gray, label["dpi"]))
        if len(pages) == count:
            break
    return pages


def timed(function, *args):
    """The value and the milliseconds of CPU this process spent on it (on one thread: a page's cost, whatever
    else the machine runs)."""
    start = time.process_time()
    value = function(*args)
    return value, 1000 * (time.process_time() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--real", type=pathlib.Path, default=None, help="a folder like ../shared/realdata")
    parser.add_argument("--newspapers", action="store_true", help="with --real: its newspaper-sized pages only")
    parser.add_argument("--finder-only", action="store_true", help="the rules and the picture network only")
    args = parser.parse_args()
    pages = real(args.real, args.pages, args.newspapers) if args.real else generated(args.pages)
    network(pages)
    if args.finder_only:
        return
    head = shipped_head()
    import torch

    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    costs: dict[str, list[float]] = {}
    counts = []
    text.text_map(pages[0])  # load the networks before timing
    embedding.embed([pages[0][:100, :100]])
    for page in pages:
        _, reference = timed(page_features, page)
        (analysed, _), analysis_ms = timed(analyse_page, page)
        text_map, text_ms = timed(text.text_map, page)
        found, candidates_ms = timed(lambda: candidates.propose(analysed, candidates.text_over_content(analysed, text_map)))
        crops = [page[c.box[1]:max(c.box[3], c.box[1] + 1), c.box[0]:max(c.box[2], c.box[0] + 1)] for c in found]
        counts.append(len(found))
        for name, value in (("rule-based analysis (reference)", reference), ("page analysis", analysis_ms),
                            ("text detector", text_ms), ("candidates and measures", candidates_ms)):
            costs.setdefault(name, []).append(value)
        for device in devices:  # ONNX Runtime on the CPU, as the picture job runs it there; torch on the GPU
            embedding.release()
            embedding._backbone = embedding._torch_network(device) if device == "cuda" else embedding._network()
            _, embed_ms = timed(embedding.embed, crops)
            if found:
                costs.setdefault(f"picture job: embedding a crop ({device})", []).append(embed_ms / len(found))
        inputs = np.array([c.vector() for c in found]).reshape(len(found), len(candidates.MEASURES))
        kept, head_ms = timed(lambda: select([c.box for c in found], head.score(inputs), head.cutoff))
        costs.setdefault("head and choice", []).append(head_ms)
        content_text = candidates.text_over_content(analysed, text_map)
        _, boxes_ms = timed(lambda: [boxes.with_margin(boxes.tighten(analysed, content_text, found[i].box), page.shape,
                                                       head.margin) for i in kept])
        costs.setdefault("kept pictures' boxes (tightened, margin)", []).append(boxes_ms)
    print(f"{len(pages)} {'real' if args.real else 'generated'} pages at 144 dpi, "
          f"{statistics.mean(counts):.1f} candidates a page (median {statistics.median(counts):.0f}); "
          f"torch threads {torch.get_num_threads()}")
    print(f"{'stage':40s} {'median ms':>10s} {'mean ms':>10s}")
    for name, values in costs.items():
        print(f"{name:48s} {statistics.median(values):10.1f} {statistics.mean(values):10.1f}")
    total = [sum(costs[name][i] for name in ("page analysis", "text detector", "candidates and measures",
                                              "head and choice", "kept pictures' boxes (tightened, margin)"))
             for i in range(len(pages))]
    ratio = statistics.mean(total) / statistics.mean(costs["rule-based analysis (reference)"])
    print(f"learned verdict, whole page: mean {statistics.mean(total):.0f} ms, {ratio:.1f}x the rule-based analysis")


def network(pages: list[np.ndarray]) -> None:
    """The picture network's stages on each page on one core (an ingest worker's): ONNX Runtime as ingest runs
    it, torch beside it as the reference."""
    import cv2
    import torch

    from curation.pictures import finder
    from curation.pictures.finder_network import load_head

    threads, cv_threads = torch.get_num_threads(), cv2.getNumThreads()
    torch.set_num_threads(1)
    cv2.setNumThreads(1)
    found = finder.shipped_finder()
    in_torch = finder.Finder.with_head(load_head(finder.WEIGHTS_FILE))
    found.find(pages[0]), in_torch.cells(pages[0])  # load before timing
    costs: dict[str, list[float]] = {}
    counts = []
    for page in pages:
        _, reference = timed(page_features, page)
        _, input_ms = timed(finder.network_input, page, finder.network_side(page.shape, 144))
        _, torch_ms = timed(in_torch.cells, page)
        cells, cells_ms = timed(found.cells, page)
        pictures, fit_ms = timed(finder.pictures_from_cells, cells, page, 144)
        counts.append(len(pictures))
        for name, value in (("rule-based analysis (reference)", reference), ("network input", input_ms),
                            ("network in torch (reference)", torch_ms),
                            ("network in ONNX Runtime (input, encoder, heads)", cells_ms),
                            ("boxes fitted to the ink", fit_ms),
                            ("picture network, whole page", cells_ms + fit_ms)):
            costs.setdefault(name, []).append(value)
    torch.set_num_threads(threads)
    cv2.setNumThreads(cv_threads)
    print(f"picture network: {len(pages)} pages, {statistics.mean(counts):.1f} pictures a page, one thread")
    print(f"{'stage':48s} {'median ms':>10s} {'mean ms':>10s}")
    for name, values in costs.items():
        print(f"{name:48s} {statistics.median(values):10.1f} {statistics.mean(values):10.1f}")
    ratio = statistics.mean(costs["picture network, whole page"]) / statistics.mean(costs["rule-based analysis (reference)"])
    print(f"picture network, whole page: {ratio:.1f}x the rule-based analysis")


if __name__ == "__main__":
    main()
