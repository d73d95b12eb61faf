"""A component's value is whatever the browser sends: a forged drag of NaN, infinity, a huge number or a string
draws no box and says why, never a traceback (pages/components/component_values.py)."""

import math

import pytest
import streamlit as st

from curation import Manifest
from pages.components import component_values as values
from pages.components import picture_large_view as large
from test_app_pictures import db, picture_ids, with_pictures  # noqa: F401  (db: a fixture)

GOOD = {"x1": 10, "y1": 20.5, "x2": 300, "y2": 400, "width": 800}


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, 10**400, 1e300, -5, "12", None, True, [1], {"x": 1}])
def test_every_number_of_a_drag_must_be_a_finite_number_within_bounds(bad):
    for name in GOOD:
        with pytest.raises(values.BadComponentValue, match=name):
            values.numbers({**GOOD, name: bad}, GOOD, 0, values.MAX_PIXELS)
    assert values.numbers(GOOD, GOOD, 0, values.MAX_PIXELS) == GOOD


@pytest.mark.parametrize("bad", [None, "x1", [1, 2, 3, 4], 5])
def test_a_drag_that_is_no_mapping_is_refused(bad):
    with pytest.raises(values.BadComponentValue):
        values.numbers(bad, GOOD, 0, values.MAX_PIXELS)


@pytest.mark.parametrize("bad", [0, -1, 10**100, True, 2.0, "3", None])
def test_grid_columns_from_a_key_press_are_left_out_unless_a_whole_number_within_bounds(bad):
    assert values.whole_number(bad, 1, values.MAX_COLUMNS) is None
    assert values.whole_number(4, 1, values.MAX_COLUMNS) == 4


@pytest.mark.parametrize("coordinate", [math.nan, math.inf, 10**30, "NaN"])
def test_a_forged_drag_on_the_large_views_page_draws_no_box_and_says_why(db, coordinate):  # noqa: F811
    with_pictures(db, pages=1)
    picture = picture_ids(db)[0]
    with Manifest(db) as manifest:
        before = [tuple(row) for row in manifest.picture_rows(order="x.id")]
    key = f"picture-page-{picture}"
    st.session_state[key] = {**GOOD, "x2": coordinate}
    try:
        large.dragged(picture, key, "add", (0, 0, 1224, 1584))  # no traceback
        problem = st.session_state.get(large.DRAG_PROBLEM)
    finally:
        st.session_state.pop(key, None)
        st.session_state.pop(large.DRAG_PROBLEM, None)
    assert problem and "x2" in problem, problem
    with Manifest(db) as manifest:
        assert [tuple(row) for row in manifest.picture_rows(order="x.id")] == before  # nothing added
