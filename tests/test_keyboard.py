"""Keyboard review's model: what each key does on the grid and in the large view, and where the focus goes,
across screens at the edges and never past the ends of the view."""

import pytest

from curation.decisions.keyboard import Cursor, Grid, action, keys, move, move_keys, placed, zoomed

# 95 pages, 40 a screen, 6 a row: screens of 40, 40 and 15 cards; the last row of a full screen holds 4.
GRID = Grid(total=95, per_screen=40, columns=6)


def test_the_keys_of_the_grid():
    assert [action(key) for key in ("ArrowLeft", "k", "ArrowRight", "j", "ArrowUp", "ArrowDown")] == \
        ["previous", "previous", "next", "next", "up", "down"]
    assert [action(key) for key in ("i", "e", "a", "Enter", "Escape", "z")] == \
        ["include", "exclude", "auto", "open", "close", "undo"]
    assert action("+") is None and action("x") is None and action("I") is None


def test_the_keys_of_the_large_view():
    assert [action(key, large_view=True) for key in ("ArrowLeft", "k", "ArrowRight", "j")] == \
        ["previous", "previous", "next", "next"]
    assert [action(key, large_view=True) for key in ("+", "=", "-")] == ["zoom in", "zoom in", "zoom out"]
    assert [action(key, large_view=True) for key in ("i", "e", "a", "z", "Escape")] == \
        ["include", "exclude", "auto", "undo", "close"]
    # Up and down scroll the large view; Enter does not open another.
    assert action("ArrowUp", large_view=True) is None and action("Enter", large_view=True) is None


def test_the_browser_listens_to_the_keys_that_do_something_and_held_arrows_move_on():
    assert {"ArrowDown", "Enter", "i", "z"} <= set(keys()) and "+" not in keys()
    assert {"+", "-", "ArrowRight"} <= set(keys(large_view=True)) and "ArrowDown" not in keys(large_view=True)
    assert set(move_keys()) == {"ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "j", "k"}


def test_next_and_previous_go_card_by_card_and_on_to_the_next_or_previous_screen():
    assert move(Cursor(1, 0), "next", GRID) == Cursor(1, 1)
    assert move(Cursor(1, 39), "next", GRID) == Cursor(2, 0)
    assert move(Cursor(2, 0), "previous", GRID) == Cursor(1, 39)
    assert move(Cursor(3, 0), "previous", GRID) == Cursor(2, 39)


def test_the_focus_stops_at_the_ends_of_the_view():
    assert move(Cursor(1, 0), "previous", GRID) == Cursor(1, 0)
    assert move(Cursor(1, 3), "up", GRID) == Cursor(1, 3)
    assert move(Cursor(3, 14), "next", GRID) == Cursor(3, 14)  # the 95th page
    assert move(Cursor(3, 14), "down", GRID) == Cursor(3, 14)


def test_up_and_down_move_a_row_in_the_same_column():
    assert move(Cursor(1, 2), "down", GRID) == Cursor(1, 8)
    assert move(Cursor(1, 8), "up", GRID) == Cursor(1, 2)
    # Into the short last row (cards 36-39): the card below if there is one, else the last card.
    assert move(Cursor(1, 32), "down", GRID) == Cursor(1, 38)
    assert move(Cursor(1, 35), "down", GRID) == Cursor(1, 39)


def test_up_and_down_at_a_screen_s_edge_go_on_to_the_next_screen_in_the_same_column():
    assert move(Cursor(1, 38), "down", GRID) == Cursor(2, 2)  # the last row's third card: column 2
    assert move(Cursor(2, 2), "up", GRID) == Cursor(1, 38)
    assert move(Cursor(2, 5), "up", GRID) == Cursor(1, 39)  # no card in column 5 of that row: its last
    assert move(Cursor(2, 39), "down", GRID) == Cursor(3, 3)


def test_the_columns_are_those_the_browser_shows():
    five = Grid(total=95, per_screen=40, columns=5)
    assert move(Cursor(1, 2), "down", five) == Cursor(1, 7)
    assert move(Cursor(1, 37), "down", five) == Cursor(2, 2)
    one = Grid(total=3, per_screen=40, columns=1)
    assert move(Cursor(1, 0), "down", one) == Cursor(1, 1)


def test_the_cursor_stays_on_the_screen_shown():
    assert placed(None, 1, GRID) == Cursor(1, 0)
    assert placed(Cursor(1, 12), 1, GRID) == Cursor(1, 12)
    assert placed(Cursor(1, 12), 2, GRID) == Cursor(2, 0)  # paged with the pager: its first card
    assert placed(Cursor(3, 30), 3, GRID) == Cursor(3, 14)  # the screen shrank: its last card
    assert placed(Cursor(1, 5), 1, Grid(total=0, per_screen=40)) == Cursor(1, 0)


def test_a_screen_counts_its_cards():
    assert [GRID.on_screen(screen) for screen in (1, 2, 3, 4)] == [40, 40, 15, 0]
    assert GRID.screens == 3 and Grid(0, 40).screens == 1


def test_zoom_goes_in_and_out_by_steps_and_stops_at_the_ends():
    assert zoomed(1.0, 1) == 1.5 and zoomed(1.5, 1) == 2.0 and zoomed(2.0, -1) == 1.5
    assert zoomed(1.0, -1) == 1.0 and zoomed(4.0, 1) == 4.0


def test_only_moves_move():
    with pytest.raises(ValueError):
        move(Cursor(1, 0), "include", GRID)
