"""What a component sends back (a drag on the page, a key press, a card's event) is whatever the browser says:
a hand-made WebSocket message can put NaN, infinity, a number of a thousand digits, a string or a list where a
component sends a number. Every number a page takes from a component is read here: a plain int or float (JSON's
true is no number), finite and within its bounds, or a BadComponentValue saying which is not, which the page
shows as a message, never a traceback."""

from __future__ import annotations

import math
from collections.abc import Iterable

# Pixels of a drag on a page as the browser reports them: no screen is this wide, no page drawn here this large.
MAX_PIXELS = 100_000
MAX_COLUMNS = 1_000  # cards in a grid's row


class BadComponentValue(ValueError):
    """A component's value that is not what the component sends: said in words for the person."""


def number(value, name: str, low: float, high: float) -> float:
    """`value` as a number within [low, high]; BadComponentValue when it is none or outside."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadComponentValue(f"the {name} the browser sent is not a number")
    if isinstance(value, int) and not low <= value <= high:  # before float(): 10**400 does not convert
        raise BadComponentValue(f"the {name} the browser sent is out of range")
    if not math.isfinite(value) or not low <= value <= high:
        raise BadComponentValue(f"the {name} the browser sent is not a number within {low:g} to {high:g}")
    return value


def numbers(value, names: Iterable[str], low: float, high: float) -> dict[str, float]:
    """The numbers `names` of a component's value (a dict), each within [low, high]."""
    if not isinstance(value, dict):
        raise BadComponentValue("the browser sent no numbers")
    return {name: number(value.get(name), name, low, high) for name in names}


def whole_number(value, low: int, high: int) -> int | None:
    """`value` when it is a whole number (an int, not a bool) within [low, high], else None: for what a page may
    leave out (a key press's grid columns, which the page then counts itself)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and low <= value <= high else None
