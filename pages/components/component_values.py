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
    if isinstance(value, int) and not low <= value <= high:  # before isfinite: 10**400 is no float
        raise BadComponentValue(f"the {name} the browser sent is out of range")
    if not math.isfinite(value) or not low <= value <= high:
        raise BadComponentValue(f"the {name} the browser sent is not a number within {low:g} to {high:g}")
    return value


def numbers(value, names: Iterable[str], low: float, high: float) -> dict[str, float]:
    """The numbers `names` of a component's value (a dict), each within [low, high]."""
    if not isinstance(value, dict):
        raise BadComponentValue("the browser sent no numbers")
    return {name: number(value.get(name), name, low, high) for name in names}


def card_event(value, types) -> dict | None:
    """The event in a card grid's value ({"event": {"type", "id", "value"}}): a type of `types`, the card's id as
    text, a value that is text or none; None for anything else (a stale or forged message does nothing)."""
    event = value.get("event") if isinstance(value, dict) else None
    if (isinstance(event, dict) and isinstance(event.get("type"), str) and event["type"] in types
            and isinstance(event.get("id"), str)
            and (event.get("value") is None or isinstance(event.get("value"), str))):
        return event
    return None


def key_presses(value, handled: int) -> list[dict]:
    """The key presses in a keyboard listener's value ({"key": {"presses": [...]}}) numbered after `handled`, in
    order: each {"key": text, "n": its number, "columns": a whole number of cards in a row, or None}; a press of
    any other shape is dropped."""
    sent = value.get("key") if isinstance(value, dict) else None
    presses = sent.get("presses") if isinstance(sent, dict) else None
    return [{**press, "columns": whole_number(press.get("columns"), 1, MAX_COLUMNS)}
            for press in (presses if isinstance(presses, list) else [])
            if isinstance(press, dict) and isinstance(press.get("key"), str)
            and whole_number(press.get("n"), handled + 1, 2**63) is not None]


def whole_number(value, low: int, high: int) -> int | None:
    """`value` when it is a whole number (an int, not a bool) within [low, high], else None: for what a page may
    leave out (a key press's grid columns, which the page then counts itself)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and low <= value <= high else None
