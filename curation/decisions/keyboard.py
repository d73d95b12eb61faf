"""Keyboard review of a paged grid: what each key does, and where the focus goes.

A grid shows one screen of a longer view (pages or pictures); the focus is one card of it. Moving past
the first or last card of a screen goes on to the card next to it on the previous or next screen, as if
the screens were one long grid; it stops at the view's ends. Plain data, so any grid can use it and it is
tested without Streamlit.
"""

from __future__ import annotations

from dataclasses import dataclass

# On the grid. j/k as in most keyboard-driven lists: j the next card, k the previous one.
GRID_KEYS = {
    "ArrowLeft": "previous", "k": "previous", "ArrowRight": "next", "j": "next",
    "ArrowUp": "up", "ArrowDown": "down",
    "i": "include", "e": "exclude", "a": "auto",
    "Enter": "open", "Escape": "close", "z": "undo",
}
# In the large view the arrow keys go from item to item; up and down scroll it as usual.
LARGE_VIEW_KEYS = {
    "ArrowLeft": "previous", "k": "previous", "ArrowRight": "next", "j": "next",
    "+": "zoom in", "=": "zoom in", "-": "zoom out",
    "i": "include", "e": "exclude", "a": "auto",
    "Escape": "close", "z": "undo",
}
MOVES = ("previous", "next", "up", "down")
DECISIONS = {"include": True, "exclude": False, "auto": None}  # an override, None: the rule decides
ZOOMS = (1.0, 1.5, 2.0, 3.0, 4.0)  # the large view's image: times its fitted width

HELP = ("Keys: ← → or j k move, ↑ ↓ a row · i include · e exclude · a auto (the rule) · Enter opens · "
        "Esc closes · z undoes · Space (held) enlarges · in the large view ← → previous and next, + − zoom")
SHORT_HELP = "Keys: ← → or j k move · i include · e exclude · a auto · Enter opens · z undoes"  # HELP in its tooltip


def action(key: str, large_view: bool = False) -> str | None:
    """What `key` (a browser's KeyboardEvent.key) does on the grid, or in the large view; None: nothing."""
    return (LARGE_VIEW_KEYS if large_view else GRID_KEYS).get(key)


def keys(large_view: bool = False) -> list[str]:
    """The keys that do something there, for the browser to listen to."""
    return sorted(LARGE_VIEW_KEYS if large_view else GRID_KEYS)


def move_keys() -> list[str]:
    """The keys that move, which may be held down to move on."""
    return sorted(key for key, what in GRID_KEYS.items() if what in MOVES)


@dataclass(frozen=True)
class Grid:
    """A view of `total` items shown `per_screen` at a time, `columns` to a row."""

    total: int
    per_screen: int
    columns: int = 1

    @property
    def screens(self) -> int:
        return max(1, -(-self.total // self.per_screen))

    def on_screen(self, screen: int) -> int:
        """How many items screen `screen` (from 1) shows."""
        return max(0, min(self.per_screen, self.total - (screen - 1) * self.per_screen))


@dataclass(frozen=True)
class Cursor:
    """The focused card: screen `screen` (from 1, as the pager counts), card `index` on it (from 0)."""

    screen: int = 1
    index: int = 0


def placed(cursor: Cursor | None, screen: int, grid: Grid) -> Cursor:
    """The cursor on the screen shown now: where it was if it is on that screen (at its last card if the
    screen shrank), else on its first card (the person paged with the pager, or the view changed)."""
    if cursor is None or cursor.screen != screen:
        return Cursor(screen, 0)
    return Cursor(screen, max(0, min(cursor.index, grid.on_screen(screen) - 1)))


def move(cursor: Cursor, where: str, grid: Grid) -> Cursor:
    """The cursor after a move ("previous", "next", "up", "down"); unchanged at the ends of the view."""
    columns = max(1, grid.columns)
    shown = grid.on_screen(cursor.screen)
    row, column = divmod(cursor.index, columns)
    if where == "next":
        if cursor.index + 1 < shown:
            return Cursor(cursor.screen, cursor.index + 1)
        return Cursor(cursor.screen + 1, 0) if cursor.screen < grid.screens else cursor
    if where == "previous":
        if cursor.index > 0:
            return Cursor(cursor.screen, cursor.index - 1)
        return Cursor(cursor.screen - 1, grid.on_screen(cursor.screen - 1) - 1) if cursor.screen > 1 else cursor
    if where == "down":
        last_row = (shown - 1) // columns
        if row < last_row:  # a row below on this screen: the card under this one, or the last if it is short
            return Cursor(cursor.screen, min(cursor.index + columns, shown - 1))
        if cursor.screen < grid.screens:  # the first row of the next screen, same column
            return Cursor(cursor.screen + 1, min(column, grid.on_screen(cursor.screen + 1) - 1))
        return cursor
    if where == "up":
        if row > 0:
            return Cursor(cursor.screen, cursor.index - columns)
        if cursor.screen > 1:  # the last row of the previous screen, same column
            before = grid.on_screen(cursor.screen - 1)
            return Cursor(cursor.screen - 1, min((before - 1) // columns * columns + column, before - 1))
        return cursor
    raise ValueError(f"not a move: {where!r}")


def zoomed(zoom: float, step: int) -> float:
    """The next zoom level in or (`step` -1) out, from ZOOMS; stays at the ends."""
    levels = list(ZOOMS)
    at = min(range(len(levels)), key=lambda i: abs(levels[i] - zoom))
    return levels[max(0, min(len(levels) - 1, at + step))]
