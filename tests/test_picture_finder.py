"""The picture finder (curation.pictures.finder): its network marks where pictures are, each box is fitted to
the picture's own ink, ingest finds pictures with it, and its recipe trains deterministically and resumes."""

import json
import pathlib
import warnings

import cv2
import numpy as np
import pytest
from click.testing import CliRunner

from curation import Manifest
from curation.cli import cli
from curation.manifest.rules import DEFAULT_PICTURE_SCORE_MIN
from curation.pictures import compose, finder, finder_train
from curation.scoring.features import REFERENCE_DPI
from curation.sources.synthetic import PageSpec, page_image_and_pictures

from test_picture_verdict import drawing_archive, drawing_page, shared


def legend_under(page: np.ndarray, drawing, seed: int = 0) -> tuple[int, int, int, int]:
    """A line of type-sized marks set under the drawing, as a legend is printed; its box."""
    rng = np.random.default_rng(seed)
    x0, _, x1, y1 = drawing
    top, height = y1 + 30, 14  # 0.2 inch under it
    page[y1 + 2:top + height + 6, x0:x1] = 235
    x = x0 + 20
    while x < x1 - 40:
        width = int(rng.integers(6, 12))
        page[top:top + height, x:x + width] = 30
        x += width + int(rng.integers(3, 8))
    return x0 + 20, top, x, top + height


def test_a_picture_is_fitted_to_its_own_ink_without_the_legend_under_it():
    page, drawing = drawing_page(seed=5)
    legend = legend_under(page, drawing)
    # Coarse cells, as the network gives them: every cell the drawing touches, reaching past its edges.
    h, w = page.shape
    scale = finder.SIDE / max(h, w) / finder.STRIDE
    cells = np.zeros((round(h * scale), round(w * scale)), np.float32)
    x0, y0, x1, y1 = drawing
    cells[int(y0 * scale):int(np.ceil(y1 * scale)), int(x0 * scale):int(np.ceil(x1 * scale))] = 0.9
    pictures = finder.pictures_from_cells(cells, page, REFERENCE_DPI, finder.Settings(gutter=0.08))
    assert len(pictures) == 1
    box = pictures[0].box
    inside, holds = shared(box, drawing)
    assert holds > 0.97 and inside > 0.9, (box, drawing)
    # Fitted to the strokes with its thin margin of paper, not the cells' coarse extent (a cell is 24 px here).
    assert all(abs(a - b) <= 10 for a, b in zip(box, drawing)), (box, drawing)
    assert box[3] < legend[1], "the legend's line is not the picture's"
    assert pictures[0].score == pytest.approx(0.9)
    assert pictures[0].area == pytest.approx((box[2] - box[0]) * (box[3] - box[1]) / REFERENCE_DPI ** 2)


def test_cells_under_the_cutoff_find_no_picture():
    page, _ = drawing_page(seed=6)
    settings = finder.shipped_settings()
    cells = np.full((8, 6), settings.cell_cutoff - 0.01, np.float32)
    assert finder.pictures_from_cells(cells, page, REFERENCE_DPI, settings) == []


def figures_side_by_side() -> tuple[np.ndarray, list[tuple[int, int, int, int]], tuple[int, int, int, int]]:
    """Two drawings printed side by side a third of an inch apart, a letter keying the first under it: the page,
    the drawings' boxes and the letter's."""
    left, first = drawing_page(seed=21)
    right, second = drawing_page(seed=22)
    page = np.full_like(left, 245)
    x0, y0, x1, y1 = first
    page[y0:y1, x0:x1] = left[y0:y1, x0:x1]
    width = min(second[2] - second[0], page.shape[1] - x1 - 60)
    shifted = (x1 + 48, y0, x1 + 48 + width, y0 + min(second[3] - second[1], y1 - y0))
    page[shifted[1]:shifted[3], shifted[0]:shifted[2]] = right[second[1]:second[1] + shifted[3] - shifted[1],
                                                               second[0]:second[0] + width]
    cx = (x0 + x1) // 2
    letter = (cx - 5, y1 + 20, cx + 5, y1 + 34)  # 0.14 inch under the drawing
    page[letter[1]:letter[3], letter[0]:letter[2]] = 20
    return page, [first, shifted], letter


def test_figures_side_by_side_are_pictures_of_their_own_and_a_keying_letter_is_left_out():
    page, drawings, letter = figures_side_by_side()
    h, w = page.shape
    scale = finder.SIDE / max(h, w) / finder.STRIDE
    cells = np.zeros((round(h * scale), round(w * scale)), np.float32)
    x0, y0 = min(d[0] for d in drawings), min(d[1] for d in drawings)
    x1, y1 = max(d[2] for d in drawings), letter[3]
    cells[int(y0 * scale):int(np.ceil(y1 * scale)), int(x0 * scale):int(np.ceil(x1 * scale))] = 0.9  # one region
    one = finder.pictures_from_cells(cells, page, REFERENCE_DPI, finder.Settings(gutter=None))
    assert len(one) == 1 and one[0].box[3] >= letter[3], "without a gutter the region is one picture, letter too"
    parted = finder.pictures_from_cells(cells, page, REFERENCE_DPI, finder.Settings(gutter=0.08, part_min=0.2))
    assert len(parted) == 2, parted
    for drawing in drawings:
        inside, holds = max((shared(p.box, drawing) for p in parted), key=lambda s: s[1])
        assert holds > 0.97 and inside > 0.9, (parted, drawing)
    assert all(p.box[3] < letter[1] for p in parted), "the letter keying a figure is not part of it"


def cells_over(page: np.ndarray, boxes: list) -> np.ndarray:
    """Cells as the network gives them, sure over each of `boxes` (page pixels) and nowhere else."""
    h, w = page.shape
    scale = finder.SIDE / max(h, w) / finder.STRIDE
    cells = np.zeros((round(h * scale), round(w * scale)), np.float32)
    for x0, y0, x1, y1 in boxes:
        cells[int(y0 * scale):int(np.ceil(y1 * scale)), int(x0 * scale):int(np.ceil(x1 * scale))] = 0.99
    return cells


def masthead_page() -> tuple[np.ndarray, list[tuple[int, int, int, int]]]:
    """A newspaper's masthead: a title in letters an inch tall across the top of a page; each letter's box."""
    page = np.full((2000, 1600), 245, np.uint8)
    cv2.putText(page, "EVENING STAR", (120, 300), cv2.FONT_HERSHEY_TRIPLEX, 4.6, 20, 14, cv2.LINE_AA)
    ink = (page < 128).astype(np.uint8)
    count, _, stats, _ = cv2.connectedComponentsWithStats(ink)
    letters = [(x, y, x + w, y + h) for x, y, w, h, _ in stats[1:] if h > 60]
    return page, sorted(letters)


def test_a_letter_of_a_masthead_the_network_marks_is_no_picture():
    """The cells of a black-letter masthead's S: the letters beside it, as tall and off the cells, make it type."""
    page, letters = masthead_page()
    assert len(letters) >= 8
    marked = letters[len(letters) // 2]
    grown = (marked[0] - 10, marked[1] - 10, marked[2] + 10, marked[3] + 10)
    assert finder.pictures_from_cells(cells_over(page, [grown]), page, REFERENCE_DPI, finder.Settings()) == []


def test_pictures_in_a_row_that_the_network_marks_stay_pictures():
    """Three drawings of one height side by side, all on the cells: a row of pictures, not a line of letters."""
    page = np.full((2000, 2200), 245, np.uint8)
    boxes = []
    for i, seed in enumerate((31, 32, 33)):
        drawing_source, drawing = drawing_page(seed=seed)
        cut = drawing_source[drawing[1]:drawing[1] + 300, drawing[0]:drawing[0] + 560]
        x = 100 + i * 640
        page[400:700, x:x + 560] = cut
        boxes.append((x, 400, x + 560, 700))
    found = finder.pictures_from_cells(cells_over(page, boxes), page, REFERENCE_DPI, finder.Settings())
    assert len(found) == 3, found


def test_ingest_runs_the_network_in_onnx_runtime_as_torch_does_without_importing_torch(tmp_path, monkeypatch):
    monkeypatch.setenv("VET_MODELS_DIR", str(tmp_path / "models"))
    page, _ = drawing_page(seed=11)
    finder.check_installed()  # makes the ONNX export, as ingest does before its workers start
    assert list((tmp_path / "models" / "finder").glob("finder-*.onnx"))
    from curation.pictures.finder_network import load_head

    in_torch = finder.Finder.with_head(load_head(finder.WEIGHTS_FILE)).cells(page)
    in_runtime = finder.Finder(finder.ExportedNetwork(finder.exported(finder.shipped_weights()))).cells(page)
    assert in_runtime.shape == in_torch.shape
    assert np.abs(in_runtime - in_torch).max() < 1e-4
    # A worker: a fresh process that finds a page's pictures with the shipped finder, as ingest's workers do.
    import subprocess
    import sys

    script = ("import sys, numpy as np; from curation.pictures import finder; "
              "page = np.full((1400, 1000), 240, np.uint8); page[200:700, 150:800] = 30; "
              "finder.found_columns(page); print('torch' in sys.modules, 'onnxruntime' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                          env={**__import__("os").environ, "VET_MODELS_DIR": str(tmp_path / "models")})
    assert done.stdout.strip() == "False True", done.stderr


def test_the_finder_finds_each_halftone_cut_of_a_generated_broadsheet():
    """A generated newspaper page (23 x 35 in: columns of type, halftone cuts with a legend under each), read at the
    large side: each cut is found, its box the cut's with its margin of paper."""
    from curation.sources.synthetic import NEWSPAPER_IN

    rgb, cuts = page_image_and_pictures(PageSpec(kind="newspaper", seed=1, dpi=100, inches=NEWSPAPER_IN))
    assert rgb.shape[:2] == (3500, 2300) and len(cuts) == 3
    found = finder.shipped_finder().find(cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY), 100)
    for x0, y0, x1, y1 in cuts:
        assert any(b[0] <= x0 and b[1] <= y0 and b[2] >= x1 and b[3] >= y1 and (b[2] - b[0]) * (b[3] - b[1])
                   < 1.2 * (x1 - x0) * (y1 - y0) for b in (p.box for p in found)), (cuts, found)


def test_a_worker_holds_a_newspaper_pages_activations_once_with_the_same_cells(tmp_path):
    """Newspaper pages of six widths read at the large side, in a fresh process as a worker reads them: the cells are
    the whole network's in the runtime's own arena (within 1e-5: the network runs in two parts, its first blocks in
    bands), and the process holds under 80 MB more (the whole network in one arena block held 94 MB; the runtime's
    own arena, grown block by block, 203)."""
    import subprocess
    import sys

    finder.check_installed()
    script = """
import numpy as np, onnxruntime
from curation.pictures import finder
def resident(key):
    return next(int(line.split()[1]) / 1024 for line in open("/proc/self/status") if line.startswith(key + ":"))
found = finder.shipped_finder()
rng = np.random.default_rng(0)
pages = [rng.integers(0, 256, (31 * 144, int(inches * 144)), np.uint8) for inches in (20, 21, 22, 23, 24, 25)]
before = resident("VmRSS")
cells = [found.cells(page, 144) for page in pages]
rise = resident("VmHWM") - before
options = onnxruntime.SessionOptions()
options.intra_op_num_threads = 1
own = onnxruntime.InferenceSession(str(finder.exported(finder.shipped_weights())), options)
for page, got in zip(pages, cells):
    blob = finder.network_input(page, finder.LARGE_SIDE)[None, None]
    expected = own.run(None, {own.get_inputs()[0].name: blob})[0][0][..., :got.shape[-2], :got.shape[-1]]
    assert np.abs(got - expected).max() < 1e-5
print(round(rise))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path,
                          env={**__import__("os").environ, "PYTHONPATH": str(pathlib.Path(__file__).parent.parent)})
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) < 80, done.stdout


def test_exporting_the_network_for_ingest_prints_no_warning():
    from curation.pictures.finder_network import export_onnx, load_head

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exported = export_onnx(load_head(finder.WEIGHTS_FILE))
    assert exported  # the graph, written all the same
    assert [str(w.message) for w in caught if issubclass(w.category, UserWarning)] == []


def test_the_network_reads_the_page_at_its_side_padded_with_paper():
    gray = np.zeros((1000, 700), np.uint8)
    pixels = finder.network_input(gray)
    assert pixels.shape == (512, 368)  # 358 columns of page, padded to a multiple of 16
    assert pixels[:, :358].max() == pytest.approx(-127 / 128)
    assert pixels[:, 360:].min() == pytest.approx(128 / 128)


def test_a_newspaper_sized_page_is_read_at_twice_the_side_so_its_small_cuts_are_seen():
    seen = []

    def network(pixels):
        seen.append(pixels.shape)
        return np.zeros((pixels.shape[0] // finder.STRIDE, pixels.shape[1] // finder.STRIDE), np.float32)

    found = finder.Finder(network, finder.Settings())
    letter = np.full((1584, 1224), 255, np.uint8)  # 11 x 8.5 inches at 144 dpi
    newspaper = np.full((3456, 2592), 255, np.uint8)  # 24 x 18 inches
    assert found.cells(letter).shape == (64, 49)
    assert found.cells(newspaper).shape == (128, 96)  # cells of half the size, each way
    assert seen == [(512, 400), (1024, 768)]
    # The page's size in inches decides, not its pixels: the same newspaper scanned at 72 dpi is read the same way.
    smaller = cv2.resize(newspaper, (1296, 1728), interpolation=cv2.INTER_AREA)
    assert found.cells(smaller, dpi=72).shape == (128, 96)
    assert found.find(smaller, dpi=72) == [] and seen[-1] == (1024, 768)
    assert found.cells(smaller).shape == (64, 48)  # at 144 dpi the same pixels are a 12-inch page


def test_the_shipped_finder_finds_a_drawing_set_into_text_and_keeps_out_of_plain_text():
    page, drawing = drawing_page(seed=11)
    pictures = finder.shipped_finder().find(page, REFERENCE_DPI)
    assert pictures, "the drawing was not found"
    inside, holds = shared(pictures[0].box, drawing)
    assert inside > 0.8 and holds > 0.8, (pictures[0], drawing)
    from test_pictures import text_page

    assert not [p for p in finder.shipped_finder().find(text_page(REFERENCE_DPI, seed=3)) if p.area >= 2.0]


def test_the_shipped_head_has_its_record():
    record = finder.record()
    assert finder.WEIGHTS_FILE.stat().st_size < 20 << 20
    assert record["seeds"] == list(finder_train.SEEDS) and "pooled" in record and "leave_one_source_out" in record
    from curation.pictures.finder_network import load_head

    assert len(load_head(finder.WEIGHTS_FILE).members) == len(record["seeds"]) * len(record["heads"])
    assert finder.shipped_settings() in finder_train.SETTINGS_GRID


def generated_sheets(count: int) -> tuple[list[compose.Sheet], list[compose.Material]]:
    """Generated pages as material, each engraving boxed by the generator (two made-up sources)."""
    sheets, pictures = [], []
    for seed in range(count):
        rgb, boxes = page_image_and_pictures(PageSpec(kind=("mixed", "text")[seed % 2], seed=seed, dpi=60))
        gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
        h, w = gray.shape
        boxed = [((x0 / w, y0 / h, x1 / w, y1 / h), compose.COUNTED) for x0, y0, x1, y1 in boxes]
        source = f"made/{seed % 2}"
        sheets.append(compose.Sheet(compose.at_work_side(gray), boxed, source))
        pictures += compose.cut_pictures(gray, boxed, source)
    return sheets, pictures


def test_composed_pages_know_their_pictures_and_their_sources():
    sheets, pictures = generated_sheets(4)
    pages = finder_train.training_pages(sheets, pictures, composed=6, seed=1)
    assert len(pages) == 2 * len(sheets) + 6
    composed = pages[-6:]
    assert all(page.sources <= {"made/0", "made/1"} and page.sources for page in composed)
    counted = [box for page in composed for box, kind in page.boxes if kind == compose.COUNTED]
    assert counted and all(0 <= b[0] < b[2] <= 1 and 0 <= b[1] < b[3] <= 1 for b in counted)
    target, weight = finder_train.targets(composed[0])
    assert target.shape == weight.shape == (finder_train.GRID, finder_train.GRID)
    again = finder_train.training_pages(sheets, pictures, composed=6, seed=1)
    assert all(np.array_equal(a.gray, b.gray) and a.boxes == b.boxes for a, b in zip(pages, again))


def test_a_picture_s_cells_are_taught_to_stop_at_its_edge():
    # A square page of 64 x 64 cells: a picture over cells 16.5-32.5 each way, and a box left out far from it.
    page = compose.Composed(np.full((1024, 1024), 235, np.uint8),
                            [((16.5 / 64, 16.5 / 64, 32.5 / 64, 32.5 / 64), compose.COUNTED),
                             ((48 / 64, 48 / 64, 56 / 64, 56 / 64), compose.IGNORED)], {"made"})
    target, weight = finder_train.targets(page)
    assert target[17:32, 17:32].all() and target.sum() == 15 * 15  # the cells whose centres it covers
    # The cells its edge runs through (their centres outside) are paper, and taught as such.
    for edge in (np.s_[16, 16:33], np.s_[32, 16:33], np.s_[16:33, 16], np.s_[16:33, 32]):
        assert not target[edge].any() and (weight[edge] == finder_train.EDGE_WEIGHT).all()
    assert weight[48:56, 48:56].max() == 0  # the box left out still teaches nothing
    assert weight[5, 5] == 1.0 and weight[40, 40] == 1.0


def test_training_is_deterministic_and_a_stopped_run_resumes_to_the_same_weights(tmp_path):
    sheets, pictures = generated_sheets(4)
    pages = finder_train.encode(finder_train.training_pages(sheets, pictures, composed=4, seed=2), tmp_path, "k")
    chosen = np.arange(len(pages.sources))
    whole = finder_train.train_head(pages, chosen, steps=6, seed=3)
    checkpoint = tmp_path / "head.pt"
    finder_train.train_head(pages, chosen, steps=6, seed=3, checkpoint=checkpoint, stop_after=5,
                             checkpoint_every=2)  # killed at 5: resumes from 4
    assert checkpoint.exists()
    resumed = finder_train.train_head(pages, chosen, steps=6, seed=3, checkpoint=checkpoint, checkpoint_every=2)
    for (name, a), b in zip(whole.state_dict().items(), resumed.state_dict().values()):
        assert np.array_equal(a.numpy(), b.numpy()), name
    untrained = finder_train.train_head(pages, chosen, steps=0, seed=3)
    assert any(not np.array_equal(a.numpy(), b.numpy())
               for a, b in zip(whole.state_dict().values(), untrained.state_dict().values()))


def test_the_finder_s_heads_each_learn_their_own_pages_and_steps_and_are_kept_together(tmp_path):
    from curation.pictures.finder_network import Head, Heads, head_bytes, head_from_bytes

    sheets, pictures = generated_sheets(4)
    pages = finder_train.encode(finder_train.training_pages(sheets, pictures, composed=4, seed=2), tmp_path, "k")
    chosen = np.arange(len(pages.sources))
    run = finder_train.Run(3, tmp_path / "k", pages)
    run.checkpoints.mkdir()
    heads = finder_train.trained_heads([run], ((0, 3), (4, 5)), 4, "all")
    assert isinstance(heads, Heads) and len(heads.members) == 2
    # The first head learned from the real pages alone (the composed ones come last), the second from every page.
    alone = finder_train.train_head(pages, chosen[:-4], steps=3, seed=3)
    every = finder_train.train_head(pages, chosen, steps=5, seed=3)
    for member, single in zip(heads.members, (alone, every)):
        for a, b in zip(member.state_dict().values(), single.state_dict().values()):
            assert np.array_equal(a.numpy(), b.numpy())
    assert sorted(p.name for p in run.checkpoints.glob("all-*.pt")) == ["all-0x3.pt", "all-4x5.pt"]
    again = head_from_bytes(head_bytes(heads))
    assert isinstance(again, Heads) and len(again.members) == 2
    page, _ = drawing_page(seed=11)
    assert np.array_equal(finder.Finder.with_head(again).cells(page), finder.Finder.with_head(heads).cells(page))
    assert finder.Finder.with_head(heads).cells(page).shape[0] == 2
    # A head kept alone (the finder's first versions, and the heads manifests learned from them) loads as one.
    assert isinstance(head_from_bytes(head_bytes(alone)), Head)
    assert finder.Finder.with_head(alone).cells(page).ndim == 2


def recipe_folder(folder, pages: int = 4):
    """Generated pages laid out as the recipe's measure: labels.jsonl, pictures.jsonl and pages/, two sources."""
    (folder / "pages").mkdir(parents=True)
    labels, boxed = [], []
    for seed in range(pages):
        rgb, boxes = page_image_and_pictures(PageSpec(kind=("mixed", "text")[seed % 2], seed=seed, dpi=60))
        h, w = rgb.shape[:2]
        name = f"{seed:02d}.png"
        cv2.imwrite(str(folder / "pages" / name), cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY))
        labels.append({"file": name, "dpi": 60, "source": f"made/{seed // 2}@1:{name}",
                       "has_illustration": bool(boxes)})
        boxed.append({"file": name, "pictures": [{"box": [x0 / w, y0 / h, x1 / w, y1 / h], "counts": True}
                                                 for x0, y0, x1, y1 in boxes]})
    for name, lines in (("labels.jsonl", labels), ("pictures.jsonl", boxed)):
        (folder / name).write_text("".join(json.dumps(line) + "\n" for line in lines))
    return folder


def test_the_recipe_trains_each_seed_s_heads_and_the_finder_is_all_of_them(tmp_path, monkeypatch, capsys):
    from curation.pictures.finder_network import load_head

    monkeypatch.setattr(finder_train, "GENERATED_PICTURES", 2)
    monkeypatch.setattr(finder, "WEIGHTS_FILE", tmp_path / "finder.npz")
    (tmp_path / "finder.json").write_bytes(finder.RECORD_FILE.read_bytes())  # the shipped one, until it is written
    monkeypatch.setattr(finder, "RECORD_FILE", tmp_path / "finder.json")
    folder = recipe_folder(tmp_path / "measure")
    cache = tmp_path / "cache"
    finder_train.main([str(folder), "--heads", "0:2,4:3", "--seeds", "5,6", "--cache", str(cache), "--workers", "2"])
    record = json.loads((tmp_path / "finder.json").read_text())
    assert record["seeds"] == [5, 6] and set(record["leave_one_source_out"]) == {"made/0", "made/1"}
    assert set(record["each_seed"]) == {"5", "6"} and "pooled" in record["each_seed"]["5"]
    printed = capsys.readouterr().out
    assert "seed 5 alone, pooled" in printed and "one seed, on average" in printed
    alone = [record["each_seed"][seed]["pooled"] for seed in ("5", "6")]
    for name, average in record["one_seed_on_average"].items():
        values = [seed[name] for seed in alone if seed[name] is not None]
        assert average["least"] == min(values, default=None) and average["most"] == max(values, default=None)
        if values:
            assert average["least"] <= average["mean"] <= average["most"]
    heads = load_head(tmp_path / "finder.npz")
    assert len(heads.members) == 4  # two heads of each seed, the first seed's first
    # Each seed composed its own pages and trained its heads on them, two at a time in processes of their own: the
    # same heads as one seed's trained alone here.
    runs = finder_train.runs_of([folder], (5, 6), 4, cache)
    assert not np.array_equal(np.asarray(runs[0].pages.fine[-1]), np.asarray(runs[1].pages.fine[-1]))
    alone = finder_train.trained_heads([runs[1]], ((0, 2), (4, 3)), 4, "again")
    for mine, theirs in zip(heads.members[2:], alone.members):
        for a, b in zip(mine.state_dict().values(), theirs.state_dict().values()):
            assert np.array_equal(a.numpy(), b.numpy())
    held_out = finder_train.held_out_cells(runs, finder_train.measured_pages(folder), ((0, 2), (4, 3)), 4)
    assert all(seen.cells.shape[0] == 4 for seen in held_out)
    # A fold's heads (kept by the run above) learned from none of the held-out source's pages, in every seed.
    fold = finder_train.trained_heads(runs, ((0, 2), (4, 3)), 4, "made__0", leaving_out="made/0")
    for run, member in zip(runs, fold.members[1::2]):
        without = [i for i, held in enumerate(run.pages.sources) if "made/0" not in held]
        assert 0 < len(without) < len(run.pages.sources)
        single = finder_train.train_head(run.pages, np.array(without), steps=3, seed=run.seed)
        for a, b in zip(member.state_dict().values(), single.state_dict().values()):
            assert np.array_equal(a.numpy(), b.numpy())
    one_seed = finder_train.heads_of_run(held_out, 1, 2)
    assert all(np.array_equal(a.cells[2:], b.cells) for a, b in zip(held_out, one_seed))
    with pytest.raises(SystemExit):
        finder_train.main([str(folder), "--seeds", "5,5"])


def test_the_heads_cells_are_combined_by_their_mean_or_their_least():
    page, drawing = drawing_page(seed=5)
    h, w = page.shape
    scale = finder.SIDE / max(h, w) / finder.STRIDE
    sure = np.zeros((round(h * scale), round(w * scale)), np.float32)
    x0, y0, x1, y1 = drawing
    sure[int(y0 * scale):int(np.ceil(y1 * scale)), int(x0 * scale):int(np.ceil(x1 * scale))] = 0.9
    doubtful = sure * 0.5  # a second head sees the picture, less surely
    cells = np.stack([sure, doubtful])
    mean = finder.pictures_from_cells(cells, page, REFERENCE_DPI, finder.Settings(cell_cutoff=0.6, combine="mean"))
    least = finder.pictures_from_cells(cells, page, REFERENCE_DPI, finder.Settings(cell_cutoff=0.6, combine="min"))
    assert len(mean) == 1 and mean[0].score == pytest.approx(0.675) and least == []
    assert finder.pictures_from_cells(cells, page, REFERENCE_DPI, finder.Settings(cell_cutoff=0.4, combine="min"))
    with pytest.raises(ValueError):
        finder.combined(cells, "max")


def test_ingest_finds_pictures_with_the_network_by_default_and_a_decision_survives_a_rescore(tmp_path):
    folder, page, drawing = drawing_archive(tmp_path, seed=43)
    db = str(tmp_path / "m.sqlite")
    result = CliRunner().invoke(cli, ["ingest", str(folder), "--db", db, "-q"])  # no --pictures: the default
    assert result.exit_code == 0, result.output

    def pictures():
        return [json.loads(line) for line in CliRunner().invoke(
            cli, ["pictures", "--db", db, "--format", "jsonl"], catch_exceptions=False).output.splitlines()]

    rows = pictures()
    width, height = page.shape[1], page.shape[0]
    best = max(rows, key=lambda r: shared((r["x0"] * width, r["y0"] * height, r["x1"] * width, r["y1"] * height),
                                          drawing)[1])
    # Stored with the cells' certainty moved so that the finder's own cutoff falls on the manifest's default.
    assert best["keep"] and DEFAULT_PICTURE_SCORE_MIN <= best["score"] <= 1
    with Manifest(db) as manifest:
        assert manifest.picture_finder == "network"
        assert {row[0] for row in manifest.conn.execute("SELECT finder FROM pictures")} == {"network"}
        picture_id = manifest.conn.execute("SELECT id FROM pictures WHERE number = ?", (best["picture"],)).fetchone()[0]
        manifest.set_picture_override(picture_id, False)
    assert CliRunner().invoke(cli, ["rescore", "--all", "--db", db, "-q"]).exit_code == 0
    again = next(r for r in pictures() if r["picture"] == best["picture"])
    assert again["override"] == "exclude" and not again["keep"]


@pytest.mark.skipif(finder.gpu_visible(), reason="on a GPU the finder runs in torch")
def test_the_finder_without_packed_weights_finds_the_same_boxes():
    """The finder's network runs without ONNX Runtime's packed copy of its weights (memory kept for nothing): its
    cells are those the runtime gives with its defaults, bit for bit, so every picture's box and score is as before,
    on letter pages and on a newspaper-sized page (read at the large side)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    exported = finder.exported(finder.shipped_weights())
    defaults = finder.ExportedNetwork(exported)  # its two parts, run in the runtime's defaults
    for name in ("front", "back"):
        getattr(defaults, name).session = onnxruntime.InferenceSession(
            str(finder.part_file(exported, name)), options, providers=["CPUExecutionProvider"])
    found = finder.shipped_finder()
    for spec in _letter_and_newspaper_pages():
        gray = cv2.cvtColor(page_image_and_pictures(spec)[0], cv2.COLOR_RGB2GRAY)
        dpi = spec.dpi
        pixels = finder.network_input(gray, finder.network_side(gray.shape, dpi))
        assert np.array_equal(found.network(pixels), defaults(pixels))
        cells = found.cells(gray, dpi)
        assert finder.pictures_from_cells(cells, gray, dpi) == finder.pictures_from_cells(
            _cut(defaults(pixels), cells.shape), gray, dpi)


def _letter_and_newspaper_pages() -> list[PageSpec]:
    specs = [PageSpec(kind=kind, seed=seed, dpi=144) for seed, kind in enumerate(("engraving", "mixed", "text"))]
    return specs + [PageSpec(kind="mixed", seed=5, dpi=72, inches=(22.5, 31.0)),
                    PageSpec(kind="newspaper", seed=2, dpi=50, inches=(23.0, 35.0))]


@pytest.mark.skipif(finder.gpu_visible(), reason="on a GPU the finder runs in torch")
def test_the_finder_run_in_bands_gives_the_whole_networks_cells_and_boxes(monkeypatch):
    """The finder's first blocks run over bands of the page (the rows either side they read too: more than their
    reach): the cells are those of the two parts run over the whole page, bit for bit, and the whole network's within
    1e-5, and every page's pictures are the same (their scores within 1e-5; the manifest keeps four places); on letter
    pages (read in two bands) and newspaper pages (four)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    whole = onnxruntime.InferenceSession(str(finder.exported(finder.shipped_weights())), options,
                                         providers=["CPUExecutionProvider"])
    banded = finder.shipped_finder()
    for spec in _letter_and_newspaper_pages():
        gray = cv2.cvtColor(page_image_and_pictures(spec)[0], cv2.COLOR_RGB2GRAY)
        pixels = finder.network_input(gray, finder.network_side(gray.shape, spec.dpi))
        assert pixels.shape[0] > finder.BAND_ROWS
        cells = banded.network(pixels)
        with monkeypatch.context() as unbanded:
            unbanded.setattr(finder, "BAND_ROWS", pixels.shape[0])
            assert np.array_equal(cells, banded.network(pixels))
        expected = whole.run(None, {"page": pixels[None, None]})[0][0]
        assert np.abs(cells - expected).max() < 1e-5
        kept = banded.cells(gray, spec.dpi)
        found = finder.pictures_from_cells(kept, gray, spec.dpi)
        alone = finder.pictures_from_cells(_cut(expected, kept.shape), gray, spec.dpi)
        assert [(p.box, p.area) for p in found] == [(p.box, p.area) for p in alone]
        assert np.allclose([p.score for p in found], [p.score for p in alone], rtol=0, atol=1e-5)


def _cut(probability: np.ndarray, shape) -> np.ndarray:
    """The cells over the page's own extent, as Finder.cells cuts them."""
    return probability[..., :shape[-2], :shape[-1]]
