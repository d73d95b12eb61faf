"""Page analysis finds pictures as ink that is not text, rules or frames (curation.scoring.pictures), at any
scan resolution; and on real scans where ../shared/realdata is at hand."""

import json

import cv2
import numpy as np
import pymupdf
import pytest

from curation.scoring.features import page_features
from curation.scoring.pictures import DEFAULT_PICTURE_AREA_MIN
from curation.scoring.scorer import score_page
from curation.sources.synthetic import PageSpec, page_image

from conftest import REALDATA, line_drawing



def scored(path, image: np.ndarray, dpi: int) -> dict:
    """Score `image` (gray or RGB) as a one-page scan PDF at `dpi`, the way ingest does."""
    ok, jpeg = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 90])
    with pymupdf.open() as doc:
        page = doc.new_page(width=image.shape[1] * 72 / dpi, height=image.shape[0] * 72 / dpi)
        page.insert_image(page.rect, stream=jpeg.tobytes())
        doc.save(path)
    with pymupdf.open(path) as doc:
        result = score_page(doc, 0)
    assert result.status == "ok", result.error
    return result.features


def text_page(dpi: int, seed: int = 1) -> np.ndarray:
    return cv2.cvtColor(page_image(PageSpec(kind="text", seed=seed, dpi=dpi, uneven=False)), cv2.COLOR_RGB2GRAY)


@pytest.mark.parametrize("dpi", [100, 150, 300])
def test_a_text_column_is_text_at_any_resolution(tmp_path, dpi):
    features = scored(tmp_path / "text.pdf", text_page(dpi), dpi)
    assert features["picture_area"] < DEFAULT_PICTURE_AREA_MIN
    assert 0.04 < features["text_height"] < 0.2  # body type, in inches: the same page at every dpi


def test_a_bitonal_text_page_is_text(tmp_path):
    page = np.where(text_page(200, seed=2) < 150, 0, 255).astype(np.uint8)
    assert scored(tmp_path / "bitonal.pdf", page, 200)["picture_area"] < DEFAULT_PICTURE_AREA_MIN


@pytest.mark.parametrize("dpi", [100, 200])
def test_a_line_drawing_with_open_hatching_is_a_picture_and_its_box_leaves_the_text_out(tmp_path, dpi):
    page = text_page(dpi, seed=3)
    side, top, left = 4 * dpi, 2 * dpi, page.shape[1] // 2 - 2 * dpi  # a 4-inch drawing mid-page
    page[top - dpi // 4:top + side + dpi // 4, left - dpi // 4:left + side + dpi // 4] = 235  # paper around it
    page[top:top + side, left:left + side] = np.minimum(235, line_drawing(side, np.random.default_rng(dpi)))
    features = scored(tmp_path / "drawing.pdf", page, dpi)
    assert features["picture_area"] >= DEFAULT_PICTURE_AREA_MIN
    to_ref = 144 / dpi
    x0, y0, x1, y1 = (features[f"picture_{k}"] / to_ref for k in ("x0", "y0", "x1", "y1"))
    assert x0 >= left - dpi // 4 and x1 <= left + side + dpi // 4  # the drawing, not the columns beside it
    assert y0 >= top - dpi // 4 and y1 <= top + side + dpi // 4
    assert (x1 - x0) * (y1 - y0) > 0.45 * side * side  # the figure spans most of its square
    boxes = json.loads(features["pictures"])
    assert boxes[0][:4] == [features[f"picture_{k}"] for k in ("x0", "y0", "x1", "y1")]


def test_two_pictures_among_text_are_two_boxes():
    page = text_page(144, seed=4)
    rng = np.random.default_rng(4)
    page[90:510, 90:510] = 235  # paper around the cuts
    page[890:1410, 590:1110] = 235
    page[100:500, 100:500] = np.minimum(235, line_drawing(400, rng))
    page[900:1400, 600:1100] = np.minimum(235, line_drawing(500, rng))
    features = page_features(page)
    assert features.picture_count == 2
    boxes = sorted(p[:4] for p in features.pictures)
    assert boxes[0][0] >= 90 and boxes[0][2] <= 510 and boxes[1][1] >= 890


def test_a_masthead_of_big_type_is_not_a_picture():
    page = text_page(144, seed=5)
    page[60:260, 80:1150] = 235
    cv2.putText(page, "THE LADIES GAZETTE", (90, 220), cv2.FONT_HERSHEY_TRIPLEX, 4.2, 20, 9)
    assert page_features(page).picture_area < DEFAULT_PICTURE_AREA_MIN


@pytest.mark.skipif(not (REALDATA / "labels.jsonl").exists(), reason="../shared/realdata is not here")
def test_real_cartoons_and_plates_are_pictures_and_real_text_pages_are_not(tmp_path):
    labels = [json.loads(line) for line in (REALDATA / "labels.jsonl").read_text().splitlines()]
    wanted = [label for label in labels if label["file"].startswith(("05_", "39_", "17_", "20_"))]
    for label in wanted:
        image = cv2.imread(str(REALDATA / "pages" / label["file"]), cv2.IMREAD_GRAYSCALE)
        features = scored(tmp_path / "real.pdf", image, label["dpi"])
        assert (features["picture_area"] >= DEFAULT_PICTURE_AREA_MIN) == label["has_illustration"], label["file"]


# What fools a picture rule on real pages, drawn: each page is text around one kind of ink that is no
# picture (or two pictures that are two), at 144 dpi, the resolution pages are scored at.

def paper(page: np.ndarray, x0: int, y0: int, x1: int, y1: int) -> None:
    page[y0:y1, x0:x1] = 235


def blackletter(page: np.ndarray, text: str, x: int, baseline: int, cap: int, seed: int = 0) -> None:
    """A masthead in a textura-like face: small letters built of heavy broken stems with diamond heads
    and feet, capitals twice as tall with a heavy bowl and a hairline swash, tails hanging below the
    line by a different length in each letter, and each letter joined to the next by a hairline, so a
    word is one dense, ornate shape the way a Fraktur title prints."""
    rng = np.random.default_rng(seed)
    stem = max(3, cap // 6)
    for word in text.split():
        start = x
        for ch in word:
            height = cap if ch.isupper() else cap // 2
            top = baseline - height
            stems = 1 if ch in "ilt" or ch.isupper() else 2
            for k in range(stems):
                sx = x + k * 2 * stem
                foot = baseline + int(rng.uniform(0, 0.35) * height)
                cv2.rectangle(page, (sx, top + stem // 2), (sx + stem, foot), 15, -1)
                for tip in (top + stem // 2, foot):  # diamond head and foot
                    diamond = [(sx - stem // 3, tip), (sx + stem // 2, tip - stem // 2),
                               (sx + stem + stem // 3, tip), (sx + stem // 2, tip + stem // 2)]
                    cv2.fillConvexPoly(page, np.array(diamond), 15)
            if x > start:  # a hairline up from the last letter's foot to this one's head
                cv2.line(page, (x - stem, baseline - stem), (x + stem // 2, top + stem), 15, max(3, stem // 5))
            right = x + (2 * stems - 1) * stem
            if ch.isupper():  # a heavy bowl and a hairline swash
                bowl = (x + 2 * stem, top + height // 3), (2 * stem, height // 4)
                cv2.ellipse(page, *bowl, 0, 200, 340, 15, stem // 2)
                cv2.ellipse(page, (x + stem, top + height // 2), (3 * stem, height // 2), 20, 100, 260, 15, 2)
                right = x + 4 * stem
            x = right + stem // 2
        x += cap // 3


@pytest.mark.parametrize("drawn, cap, inches", [("solid", 300, (17.0, 22.0)), ("open", 170, (8.5, 11.0))])
def test_a_blackletter_masthead_is_not_a_picture(drawn, cap, inches):
    """A newspaper's title: on a 17-inch front page its capitals stand two inches tall."""
    page = cv2.cvtColor(page_image(PageSpec(kind="text", seed=21, dpi=144, uneven=False, inches=inches)),
                        cv2.COLOR_RGB2GRAY)
    head = 2 * cap
    paper(page, 40, 30, page.shape[1] - 40, head)
    title = np.full_like(page[:head], 235)
    blackletter(title, "Evening Star", page.shape[1] // 10, int(1.35 * cap), cap)
    if drawn == "open":  # open (shaded) letters: only their outline is inked, most of the box is paper
        inked = (title < 128).astype(np.uint8)
        title[(inked - cv2.erode(inked, np.ones((7, 7), np.uint8))) == 0] = 235
    page[:head] = np.minimum(page[:head], title)
    for y in (head - 24, head - 18):  # the double rule under the title
        cv2.line(page, (50, y), (page.shape[1] - 50, y + 2), 20, 2)
    features = page_features(page)
    assert features.picture_area < DEFAULT_PICTURE_AREA_MIN, features.pictures


def test_a_wide_headline_is_not_a_picture():
    page = text_page(144, seed=22)
    paper(page, 40, 300, 1190, 420)
    # Capitals among small letters, heavy and close enough to run together.
    cv2.putText(page, "French Gain on Canal du Nord", (50, 390), cv2.FONT_HERSHEY_TRIPLEX, 2.1, 15, 7)
    features = page_features(page)
    assert features.picture_area < DEFAULT_PICTURE_AREA_MIN, features.pictures


def test_a_ruled_box_of_text_is_not_a_picture():
    page = text_page(144, seed=23)
    x0, y0, x1, y1 = 420, 300, 800, 1000  # 2.6 x 4.9 inches, framed by a double rule
    paper(page, x0 - 10, y0 - 10, x1 + 10, y1 + 10)
    for inset in (0, 6):
        cv2.rectangle(page, (x0 + inset, y0 + inset), (x1 - inset, y1 - inset), 20, 2)
    cv2.putText(page, "TOMORROW", (x0 + 50, y0 + 60), cv2.FONT_HERSHEY_TRIPLEX, 1.2, 20, 2)
    rng = np.random.default_rng(23)
    for y in range(y0 + 100, y1 - 30, 22):
        words = "".join(rng.choice(list("abcdefghilmnoprstuvw "), 24))
        cv2.putText(page, words, (x0 + 25, y), cv2.FONT_HERSHEY_SIMPLEX, 0.6, 20, 1)
    features = page_features(page)
    assert features.picture_area < DEFAULT_PICTURE_AREA_MIN, features.pictures


def handwriting_page(seed: int) -> np.ndarray:
    """Cursive lines: each word one pen stroke of loops whose height wanders, ascenders and
    descenders reaching two and three times the small letters, the baseline drifting."""
    rng = np.random.default_rng(seed)
    page = np.full((1584, 1224), 232, np.uint8)
    for line in range(14):
        baseline, x = 150 + line * 95 + rng.integers(-8, 8), 90 + rng.integers(0, 40)
        while x < 1100:
            n = int(rng.integers(3, 24))  # letters in the word: short words, and long ones wider than any letter
            t = np.linspace(0, n * np.pi, n * 12)
            small = rng.uniform(12, 20)
            tall = rng.random(n)[np.minimum((t / np.pi).astype(int), n - 1)] < 0.2  # ascenders and descenders
            height = small * np.where(tall, 2.8, 1.0)
            xs = x + t / np.pi * small * 0.9 + 4 * np.sin(t)
            ys = baseline - height * (0.5 - 0.5 * np.cos(t)) + np.linspace(0, rng.uniform(-10, 10), t.size)
            cv2.polylines(page, [np.stack([xs, ys], 1).astype(np.int32)], False, 30, 2, cv2.LINE_AA)
            x = int(xs[-1]) + int(rng.integers(20, 45))
    return page


def test_a_handwritten_page_is_not_a_picture():
    for seed in range(20, 28):
        features = page_features(handwriting_page(seed))
        assert features.picture_area < DEFAULT_PICTURE_AREA_MIN, (seed, features.pictures)


def test_the_scanner_bed_in_a_corner_is_not_a_picture():
    page = text_page(144, seed=29)
    # The page lay askew: a wedge of dark scanner bed in its top corner, the rest of the border paper.
    cv2.fillConvexPoly(page, np.array([(0, 0), (560, 0), (0, 110)]), 25)
    features = page_features(page)
    assert features.picture_area < DEFAULT_PICTURE_AREA_MIN, features.pictures


def test_an_engravings_box_stops_above_its_legend():
    page = text_page(144, seed=25)
    left, top, side = 330, 300, 560  # a 3.9-inch engraving mid-page, its legend under it
    paper(page, left - 30, top - 30, left + side + 30, top + side + 110)
    page[top:top + side, left:left + side] = np.minimum(235, line_drawing(side, np.random.default_rng(25)))
    legend_top = top + side + 30
    cv2.putText(page, "SEPTEMBER MORN.", (left + 120, legend_top + 28), cv2.FONT_HERSHEY_TRIPLEX, 1.1, 20, 2)
    features = page_features(page)
    x0, y0, x1, y1 = features.picture_box
    assert y1 <= legend_top and y1 > top + 0.8 * side
    assert x0 >= left - 20 and x1 <= left + side + 20


def test_two_cuts_side_by_side_are_two_boxes():
    page = text_page(144, seed=26)
    paper(page, 180, 300, 1050, 760)
    rng = np.random.default_rng(26)
    for left in (200, 563):  # two 2.2-inch cuts whose ink stands 0.3 inch apart
        page[320:720, left:left + 400] = np.minimum(page[320:720, left:left + 400], line_drawing(400, rng))
    features = page_features(page)
    big = sorted(p[:4] for p in features.pictures if p[4] >= DEFAULT_PICTURE_AREA_MIN)
    assert len(big) == 2, features.pictures
    assert big[0][2] <= 585 and big[1][0] >= 580


def test_the_figures_of_a_plate_are_one_picture():
    page = np.full((1584, 1224), 232, np.uint8)  # a plate: figures and no text
    rng = np.random.default_rng(27)
    page[150:550, 150:550] = np.minimum(232, line_drawing(400, rng))
    page[800:1300, 600:1100] = np.minimum(232, line_drawing(500, rng))
    features = page_features(page)
    assert features.picture_count == 1
    x0, y0, x1, y1 = features.picture_box
    assert x0 <= 200 and y0 <= 200 and x1 >= 1040 and y1 >= 1250  # from the first figure to the second


def test_pictures_command_lists_every_picture_with_its_box_and_decision(tmp_path):
    from click.testing import CliRunner

    from curation import Manifest
    from curation.cli import cli

    page = text_page(144, seed=28)
    paper(page, 290, 290, 910, 910)
    page[300:900, 300:900] = np.minimum(235, line_drawing(600, np.random.default_rng(28)))
    ok, jpeg = cv2.imencode(".jpg", page)
    folder = tmp_path / "archive"
    folder.mkdir()
    with pymupdf.open() as doc:
        doc.new_page(width=612, height=792).insert_image(pymupdf.Rect(0, 0, 612, 792), stream=jpeg.tobytes())
        doc.save(folder / "issue.pdf")
    db = str(tmp_path / "m.sqlite")
    assert CliRunner().invoke(cli, ["ingest", str(folder), "--db", db, "-q"]).exit_code == 0
    result = CliRunner().invoke(cli, ["pictures", "--db", db, "--format", "jsonl"], catch_exceptions=False)
    rows = [json.loads(line) for line in result.output.splitlines()]
    assert [r["picture"] for r in rows] == list(range(1, len(rows) + 1)) and rows
    first = rows[0]
    assert first["doc"].endswith("issue.pdf") and first["page"] == 1  # pages count from 1, as a PDF viewer counts
    assert first["keep"] is True and first["decided_by"] == "threshold"
    assert abs(first["x0"] - 360 / 1224) < 0.02 and abs(first["y1"] - 870 / 1584) < 0.02  # the drawing's ink
    assert 10 < first["area"] < 17  # about 3.3 by 4 inches
    with Manifest(db) as manifest:
        manifest.set_override(manifest.documents()[0]["id"], 0, False)
    result = CliRunner().invoke(cli, ["pictures", "--db", db, "--format", "csv"], catch_exceptions=False)
    assert "False,page,auto" in result.output  # its page is excluded by the curator; the picture itself is not
    for fmt in ("table",):
        assert "decided_by" in CliRunner().invoke(cli, ["pictures", "--db", db, "--format", fmt]).output


@pytest.mark.parametrize("dots", [40, 300])  # 1,600 dark pieces; 90,000, past what 2 bytes a label can number
def test_a_component_is_dark_throughout_as_its_darkest_ink_says_however_many_pieces_it_holds(dots):
    """Which large components stay large in their darkest ink is found with the pieces labelled in 2 bytes a pixel
    where they are few enough, and in 4 where they are not: the answer is the same either way, and the one the
    labels give looked up at once."""
    from curation.scoring.pictures import _dark_throughout

    side = 2 * dots
    ink = np.zeros((side + 40, side + 40), np.uint8)
    ink[10:10 + side, 10:10 + side] = 120  # a component of light ink, dotted with isolated dark pixels
    ink[10:10 + side:2, 10:10 + side:2] = 250
    ink[20:24, 20:10 + side] = 250  # and a dark bar across it: a piece far larger than a letter
    _, labels, stats, _ = cv2.connectedComponentsWithStats((ink >= 100).astype(np.uint8), connectivity=8)
    chosen = np.ones(len(stats) - 1, bool)
    still = _dark_throughout(ink, 200, labels, stats, chosen, text_height=2, dpi=40)
    assert still.tolist() == [True]
    ink[20:24] = 120  # without the bar, only dots: no piece stays large
    assert _dark_throughout(ink, 200, labels, stats, chosen, text_height=2, dpi=40).tolist() == [False]
