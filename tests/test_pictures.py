"""Page analysis finds pictures as ink that is not text, rules or frames (curation.scoring.pictures), at any
scan resolution; and on real scans where ../shared/realdata is at hand."""

import json

import cv2
import numpy as np
import pymupdf
import pytest

from curation.manifest.store import DEFAULT_PICTURE_AREA_MIN
from curation.scoring.features import page_features
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
