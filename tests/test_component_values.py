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


@pytest.mark.parametrize("event", [None, [], {"type": "open"}, {"type": "open", "id": 12}, {"type": "run", "id": "1"},
                                   {"type": "decide", "id": "1", "value": math.nan}, {"type": ["open"], "id": "1"}])
def test_a_card_event_of_another_shape_does_nothing(event):
    assert values.card_event({"event": event}, {"open", "decide"}) is None
    good = {"type": "decide", "id": "12", "value": "exclude"}
    assert values.card_event({"event": good}, {"open", "decide"}) == good


def test_key_presses_of_another_shape_are_dropped_and_their_columns_checked():
    presses = [{"key": "i", "n": 3, "columns": 4}, {"key": "e", "n": 4, "columns": math.nan},
               {"key": "a", "n": math.inf}, {"key": 5, "n": 5}, {"key": "z", "n": True}, {"key": "j", "n": 2}, "x",
               {"key": "k", "n": 10**30, "columns": 10**30}]
    assert values.key_presses({"key": {"presses": presses}}, handled=2) == [
        {"key": "i", "n": 3, "columns": 4}, {"key": "e", "n": 4, "columns": None}]  # k: no such number
    assert values.key_presses({"key": {"presses": "iii"}}, handled=0) == []
    assert values.key_presses(None, handled=0) == []
