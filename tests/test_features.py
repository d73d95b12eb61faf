"""Page features behave as named on synthetic pages (curation.scoring.features)."""

import cv2
import numpy as np
import pytest

from curation.decisions.duplicates import group_near_duplicates
from curation.scoring.features import hamming, page_features
from curation.sources.synthetic import PageSpec, page_image

LETTER_144 = dict(dpi=144)


def gray(kind, seed=1, **extra):
    return cv2.cvtColor(page_image(PageSpec(kind=kind, seed=seed, **LETTER_144, **extra)), cv2.COLOR_RGB2GRAY)


def on_scanner_bed(image, left=80, bottom=60, value=20):
    """The page as scanned with the dark scanner lid showing on two sides."""
    return np.pad(image, ((0, bottom), (left, 0)), constant_values=value)


def test_a_dark_border_lifts_sigma_but_not_the_trimmed_sigma():
    page = gray("text", seed=3, uneven=False)
    scanned = on_scanner_bed(page)
    plain, bordered = page_features(page), page_features(scanned)
    assert scanned.std() > page.std() + 8  # what fools the original rule
    assert abs(bordered.sigma_content - plain.sigma_content) < 0.5


def test_a_blank_page_has_near_zero_ink_and_no_picture():
    features = page_features(gray("blank", seed=4))
    assert features.ink_tone < 0.15
    assert features.ink_coverage < 0.02
    assert features.picture_share == 0 and features.picture_box is None


def test_uneven_light_is_not_ink():
    flat = np.full((1584, 1224), 215, np.uint8)
    ramp = (flat * np.linspace(0.7, 1.0, 1224, dtype=np.float32)[None, :]).astype(np.uint8)
    assert ramp.std() > 15
    assert page_features(ramp).ink_coverage < 0.01


@pytest.mark.parametrize("kind", ["engraving", "faded_engraving"])
def test_engravings_are_mostly_picture(kind):
    features = page_features(gray(kind, seed=5))
    assert features.picture_share > 0.15


def test_text_with_bleed_through_and_ornaments_have_next_to_no_picture():
    for kind, seed in (("text", 6), ("ornament", 7), ("ornament", 8)):
        features = page_features(gray(kind, seed=seed, bleed=True))
        assert features.picture_share < 0.02, (kind, seed)
        assert features.ink_coverage > 0.05


def test_picture_box_frames_the_plate_of_a_mixed_page():
    page = np.full((1584, 1224), 225, np.uint8)
    plate = cv2.cvtColor(page_image(PageSpec(kind="engraving", seed=9, dpi=144, inches=(8.5, 6.0))), cv2.COLOR_RGB2GRAY)
    page[100:100 + plate.shape[0], :] = plate
    x0, y0, x1, y1 = page_features(page).picture_box
    assert y0 >= 90 and y1 <= 100 + plate.shape[0] + 10
    assert y1 - y0 > 0.7 * plate.shape[0]


def test_the_same_plate_rescanned_has_a_close_hash_and_other_plates_do_not():
    plate = gray("engraving", seed=10)
    rescanned = np.clip(plate.astype(np.int16) + np.random.default_rng(0).normal(0, 6, plate.shape), 0, 255).astype(np.uint8)
    rescanned = cv2.resize(rescanned[8:-8, 6:-6], plate.shape[::-1])
    other = gray("engraving", seed=11)
    a, b, c = (page_features(x).phash for x in (plate, rescanned, other))
    assert hamming(a, b) <= 6 < hamming(a, c)
    assert group_near_duplicates([a, c, b, None]) == [[0, 2]]
