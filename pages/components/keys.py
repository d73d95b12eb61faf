"""Keyboard review for a Review grid: one listener on the page reports each key press to Python, and the
grid's focus, decisions, undo and large view follow it. Streamlit code only; what a key does and where
the focus goes is curation.decisions.keyboard.

A grid uses it so (see pages/review.py):

    hotkeys.review_grid("review-pages", items, screen=screen, screen_key="page",
                        grid=keyboard.Grid(total, per_screen, columns), opened_key="review_open",
                        large_view=draw_the_large_view,  # of the item Session State's "review_open" holds
                        actions=hotkeys.Actions(decide=..., open=..., close=..., undo=...),
                        card_key=lambda item: f"review-card-{item[0]}-{item[1]}")
    ... every card drawn in st.container(key=card_key(item)) ...
    # the large view, a dialog: @st.dialog(..., on_dismiss=lambda: hotkeys.dismissed("review-pages")), and in it:
    hotkeys.large_view_buttons("review-pages")
    hotkeys.zoomed_image("review-pages", image)
"""

from __future__ import annotations

import functools
import os
import uuid
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

import streamlit as st

from curation.decisions import keyboard as keymap
from pages.components import component_values

# The listener lives in the page itself (components v2 are not in an iframe), on the window in the capture phase,
# so a key reaches the grid before a focused widget sees it: after a click on a filter, the arrows still move the
# cards instead of the browser's focus along the filter's buttons, and Enter opens the card instead of switching
# the filter. Only typing keeps its keys (a text box, a select's open list), and Enter presses a button the person
# reached with Tab (the keyboard's own way to a button), not one they last clicked. One listener per keyboard
# name, however often Streamlit renders the component: each render replaces the one before. Space, held, shows
# the focused card's picture larger (peek), in the browser alone.
LISTENER_JS = r"""
const QUEUED = 20;  // presses kept until handled, at most

export default function (component) {
  const { data, setTriggerValue } = component;
  const registry = (window.__curationKeyboards = window.__curationKeyboards || {});
  const name = data.name;
  // Presses come faster than the script runs while a screen loads, and Streamlit then keeps only the latest
  // value: so each value carries every press the server has not handled yet (data.handled, the last it did, in
  // this session), numbered, and the server skips those it has. None is lost, none done twice.
  const sessions = (window.__curationPresses = window.__curationPresses || {});
  if (!sessions[name] || sessions[name].session !== data.session) {
    sessions[name] = { session: data.session, count: 0, queue: [] };
  }
  const sent = sessions[name];
  sent.queue = sent.queue.filter((press) => press.n > (data.handled || 0));
  const previous = registry[name];
  if (previous) {
    window.removeEventListener("blur", previous.focusLeft);
    for (const target of previous.frames || [window]) {
      try {
        target.removeEventListener("keydown", previous.listener, true);
        target.removeEventListener("keyup", previous.release, true);
      } catch (error) { /* the frame is gone */ }
    }
  }
  // The large view is a dialog that opens and closes without drawing the page again: its keys are chosen as
  // each key is pressed.
  const wanted = new Set(data.keys || []);
  const wantedLarge = new Set(data.large_keys || data.keys || []);
  const largeOpen = () => Boolean(document.querySelector("[role='dialog']"));
  const moves = new Set(data.moves || []);
  // Typing: a text box, or a select's search while its list is open. A checkbox, a toggle, a slider or a
  // select whose list is closed (an option chosen) was only clicked: the keys go on moving the cards.
  const texts = new Set(["", "text", "search", "email", "number", "password", "tel", "url"]);
  const typing = (target) => target && (target.isContentEditable || target.tagName === "TEXTAREA" ||
      (target.tagName === "INPUT" && texts.has((target.getAttribute("type") || "").toLowerCase()) &&
       !(target.getAttribute("role") === "combobox" && target.getAttribute("aria-expanded") !== "true")));
  const pressing = (target) => target && target.closest && target.closest("button, a, [role='button']");
  const inDialog = (target) => target && target.closest && target.closest("[role='dialog']");
  const columns = () => {  // the cards in the grid's first row, as the browser lays them out now
    if (!data.cards) return null;
    const cards = document.querySelectorAll(`[class*="${data.cards}"]`);
    if (!cards.length) return null;
    const top = cards[0].getBoundingClientRect().top;
    let count = 0;
    for (const card of cards) {
      if (Math.abs(card.getBoundingClientRect().top - top) > 2) break;
      count += 1;
    }
    return count;
  };
  // How the focus came where it is: by Tab (the keyboard) or by a click (then the keys belong to the grid).
  if (!window.__curationFocusBy) {
    window.__curationFocusBy = { tabbed: false };
    window.addEventListener("pointerdown", () => { window.__curationFocusBy.tabbed = false; }, true);
    window.addEventListener("keydown", (event) => {
      if (event.key === "Tab") window.__curationFocusBy.tabbed = true;
    }, true);
  }
  const peek = (on) => document.body.classList.toggle("curation-peek", on);
  const listener = (event) => {
    if (event.curationDismiss) return;  // the Esc passed on to the large view's dialog, below
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    const tabbedTo = pressing(event.target) && window.__curationFocusBy.tabbed;  // Space and Enter press it
    if (event.key === " " && data.cards && !inDialog(event.target) && !tabbedTo) {  // held: the card larger
      event.preventDefault();
      event.stopPropagation();
      peek(true);
      return;
    }
    if (!(largeOpen() ? wantedLarge : wanted).has(event.key)) return;
    if (event.key === "Enter" && (tabbedTo || (pressing(event.target) && inDialog(event.target)))) return;
    event.preventDefault();  // the arrows move the cards, not the page nor the focus
    event.stopPropagation();  // nor a focused widget (a filter's buttons)
    if (event.repeat && !moves.has(event.key)) return;  // a held key moves on, but decides only once
    const dialog = document.querySelector("[role='dialog']");
    if (event.key === "Escape" && dialog && data.dismiss) {  // the dialog closes itself, at once, and says so
      const again = new KeyboardEvent("keydown", { key: "Escape", code: "Escape", bubbles: true, cancelable: true });
      again.curationDismiss = true;
      dialog.dispatchEvent(again);
      return;
    }
    sent.count += 1;
    sent.queue = [...sent.queue, { key: event.key, columns: columns(), n: sent.count }].slice(-QUEUED);
    setTriggerValue("key", { presses: sent.queue });
  };
  const release = (event) => { if (event.key === " ") peek(false); };
  // A drag on the large view's page ends inside its frame (a component of the same origin), which keeps the focus:
  // the keys pressed next are heard there too.
  const frames = new Set();
  const hear = (target) => {
    if (frames.has(target)) return;
    try {
      target.addEventListener("keydown", listener, true);
      target.addEventListener("keyup", release, true);
      frames.add(target);
    } catch (error) { /* a frame of another origin: its keys stay its own */ }
  };
  const focusLeft = () => setTimeout(() => {
    const frame = document.activeElement;
    if (frame && frame.tagName === "IFRAME") hear(frame.contentWindow);
  }, 0);
  hear(window);
  focusLeft();  // it may be there already: this listener replaces one drawn before
  window.addEventListener("blur", focusLeft);
  registry[name] = { listener, release, frames, focusLeft };
  return () => {
    window.removeEventListener("blur", focusLeft);
    for (const target of frames) {
      try {
        target.removeEventListener("keydown", listener, true);
        target.removeEventListener("keyup", release, true);
      } catch (error) { /* the frame is gone */ }
    }
    if (registry[name] && registry[name].listener === listener) delete registry[name];
  };
}
"""

# Brings the focused card into sight when it moves (not on first load, not when something else reruns the page).
REVEAL_JS = r"""
export default function (component) {
  const { data } = component;
  const shown = (window.__curationFocus = window.__curationFocus || {});
  const before = shown[data.name];
  shown[data.name] = data.focus;
  if (before === undefined || before === data.focus) return;
  let tries = 20;
  const reveal = () => {
    const card = document.querySelector(`.${data.focus}`);
    if (card) card.scrollIntoView({ block: "nearest" });
    else if (--tries > 0) setTimeout(reveal, 50);
  };
  reveal();
}
"""

_listener = st.components.v2.component("curation_keyboard", js=LISTENER_JS)
_reveal = st.components.v2.component("curation_keyboard_focus", js=REVEAL_JS)

# The focused card's outline; while Space is held, its picture twice as large above its neighbours (peek).
FOCUS_STYLE = ("<style>.{card} {{ outline: 3px solid {color}; outline-offset: 7px; border-radius: 0.5rem; }} "
               ".curation-peek .{card} img {{ transform: scale(2.2); position: relative; "
               "z-index: 20; box-shadow: 0 4px 24px rgba(0,0,0,.35); }}</style>")


@dataclass(frozen=True)
class Actions:
    """What the keys do to an item of the grid (whatever the grid's items are: pages, pictures)."""

    decide: Callable[[Hashable, bool | None], None]  # include (True), exclude (False), auto (None)
    open: Callable[[Hashable], None]  # the large view of an item
    close: Callable[[], None]  # the large view
    undo: Callable[[], None] | None = None  # the person's last change, as it is when the key is pressed
    # The manifest's latest change, read afresh: closing the large view redraws the grid behind it only if
    # something changed since the grid was drawn. None: always.
    version: Callable[[], Hashable] | None = None


def keyboard(name: str, *, large_view: bool = False, cards: str | None = None, paused: bool = False,
             on_press: Callable[[], None] | None = None, with_large_view: bool = False) -> None:
    """Listen to the keys for a grid (or, `large_view`, for its large view).

    `cards` is what the grid's card classes start with (Streamlit's "st-key-" + the container key), to count
    the columns. `paused`: no key does anything (another dialog is open). `on_press` runs before the
    script, as a widget's callback; it reads the press with `pressed(name)`. `with_large_view`: the large
    view may open and close without this run (a fragment draws it), so the browser hears the large view's
    keys while it is open and the grid's otherwise."""
    state = st.session_state
    data = {"name": name, "keys": [] if paused else keymap.keys(large_view), "moves": keymap.move_keys(),
            "cards": cards, "session": state.setdefault(f"{name}-session", uuid.uuid4().hex),
            "handled": state.get(f"{name}-handled", 0)}
    if with_large_view:
        data["large_keys"] = [] if paused else keymap.keys(True)
        data["dismiss"] = True  # Esc closes the large view's dialog in the browser: see dismissed
    # A callback names the event: without one, Streamlit would not report the key at all.
    _listener(key=name, data=data, on_key_change=on_press or (lambda: None), width="content", height="content")


def pressed(name: str) -> list[dict]:
    """The presses not handled yet, in the order pressed ({"key": KeyboardEvent.key, "columns": cards in the
    grid's first row or None, "n": its number}), in the listener's `on_press` callback."""
    return component_values.key_presses(st.session_state.get(name), st.session_state.get(f"{name}-handled", 0))


def review_grid(name: str, items: Sequence[Hashable], *, screen: int, screen_key: str, grid: keymap.Grid,
                opened_key: str, actions: Actions, card_key: Callable[[Hashable], str],
                large_view: Callable[[Hashable], None] | None = None, paused: bool = False) -> Hashable | None:
    """Keyboard review of one screen of a grid: `items` are the cards shown, in order, on screen `screen`
    of the pager whose Session State key is `screen_key`; Session State's `opened_key` holds the item in the
    large view, if any, which `large_view(item)` draws (a dialog; see _draw_large_view); `paused` while another
    dialog is open. Marks the focused card (its container has the key `card_key(item)`) and returns its item."""
    if not items:
        return None
    state = st.session_state
    cursor = keymap.placed(state.get(f"{name}-cursor"), screen, grid)
    opened = state.get(opened_key)
    if opened in items:  # opened by a click: the keys go on from there
        cursor = keymap.Cursor(screen, list(items).index(opened))
    if state.pop(f"{name}-open-focused", False):  # "next" in the large view went on to this screen
        opened = items[cursor.index]
        actions.open(opened)
    state[f"{name}-cursor"] = cursor
    # What the grid shows: the manifest's state, and whether the large view was open (then the page behind it
    # may be drawn without parts of the grid's own, its Undo bar).
    state[f"{name}-drawn"] = (actions.version() if actions.version else None, opened is not None)
    state[f"{name}-actions"] = actions
    cards = [f"st-key-{card_key(item)}" for item in items]
    state[f"{name}-act"] = functools.partial(_act, list(items), screen, grid, screen_key, opened_key, actions, name)
    with st.container(horizontal=True, vertical_alignment="center", gap="small", key=f"{name}-keys"):
        st.caption(keymap.SHORT_HELP, help=keymap.HELP)  # one line: the grid's first row stays on the first screen
        keyboard(name, large_view=opened is not None, cards=os.path.commonprefix(cards), paused=paused,
                 on_press=functools.partial(_on_press, name), with_large_view=large_view is not None)
        _outline(name)(name, cards, screen, grid)
        if large_view is not None:
            _large_view(name)(opened_key, large_view)
    return items[cursor.index]


_LARGE_VIEWS: dict[str, Callable] = {}


def _large_view(name: str) -> Callable:
    """The grid's large view as a fragment of its own: a key that opens it, goes on to the next item in it or
    zooms reruns only this, not the grid behind it; closing it, and a decision, run the whole page."""
    if name not in _LARGE_VIEWS:
        _LARGE_VIEWS[name] = st.fragment(_draw_large_view, key=f"{name}-large")
    return _LARGE_VIEWS[name]


def _draw_large_view(opened_key: str, draw: Callable[[Hashable], None]) -> None:
    opened = st.session_state.get(opened_key)
    if opened is not None:
        draw(opened)


_OUTLINES: dict[str, Callable] = {}


def _outline(name: str) -> Callable:
    """The focused card's outline, as a fragment of its own: a move on the screen reruns only this, so it
    costs the same however large the manifest (see _act)."""
    if name not in _OUTLINES:
        _OUTLINES[name] = st.fragment(_draw_outline, key=f"{name}-focus")
    return _OUTLINES[name]


def _draw_outline(name: str, cards: list[str], screen: int, grid: keymap.Grid):
    focus = cards[keymap.placed(st.session_state.get(f"{name}-cursor"), screen, grid).index]
    st.html(FOCUS_STYLE.format(card=focus, color=st.get_option("theme.primaryColor") or "currentColor"))
    _reveal(data={"name": name, "focus": focus}, key=f"{name}-reveal", width="content", height="content")


def _on_press(name: str):
    presses, act = pressed(name), st.session_state.get(f"{name}-act")
    for press in presses:
        st.session_state[f"{name}-handled"] = press["n"]
        if act is not None:  # several presses at once (a screen was loading): the whole page runs after them
            act(press["key"], press.get("columns"), in_parts=len(presses) == 1)


def select(name: str, item: Hashable):
    """A click on a card: the focus moves to it, as the arrows would move it (only the outline runs again)."""
    act = st.session_state.get(f"{name}-act")
    items, screen = (act.args[0], act.args[1]) if act is not None else ([], None)
    if item in items:
        st.session_state[f"{name}-cursor"] = keymap.Cursor(screen, items.index(item))
        st.rerun(f"{name}-focus")


def open_item(name: str, item: Hashable):
    """A click on a card's picture or its Open: the large view of it, the focus on its card (only the large
    view and the outline run again, as Enter does)."""
    act = st.session_state.get(f"{name}-act")
    actions = st.session_state.get(f"{name}-actions")
    if act is None or actions is None or item not in act.args[0]:
        return
    st.session_state[f"{name}-cursor"] = keymap.Cursor(act.args[1], act.args[0].index(item))
    actions.open(item)
    if name in _LARGE_VIEWS:
        st.rerun([f"{name}-large", f"{name}-focus"])


def press(name: str, key: str):
    """Do what `key` does, as if pressed: for the buttons that do the same as a key."""
    act = st.session_state.get(f"{name}-act")
    if act is not None:
        act(key, in_parts=False)


def _act(items: list, screen: int, grid: keymap.Grid, screen_key: str, opened_key: str, actions: Actions, name: str,
         key: str, columns: int | None = None, in_parts: bool = True):
    """One key press, against the screen the person saw when they pressed it and the large view open now. A move
    on the screen reruns only the outline, and opening the large view, a move in it or a zoom only the large
    view (a widget callback may name the fragments to rerun); anything else the whole page. Not `in_parts`: the
    caller reruns the whole page (a button's press in the script's body)."""
    cursor = keymap.placed(st.session_state.get(f"{name}-cursor"), screen, grid)
    opened = st.session_state.get(opened_key)
    large_view = opened is not None
    action = keymap.action(key, large_view)
    if action is None:
        return
    alone = in_parts and name in _LARGE_VIEWS  # the large view is a fragment of its own
    if action in keymap.MOVES:
        columns = columns or grid.columns  # as the browser lays the grid out now, checked in key_presses
        moved = keymap.move(cursor, action, keymap.Grid(grid.total, grid.per_screen, columns))
        st.session_state[f"{name}-cursor"] = moved
        if moved.screen != cursor.screen:
            st.session_state[screen_key] = moved.screen
        if large_view and moved != cursor:
            if moved.screen == cursor.screen:
                actions.open(items[moved.index])
            else:  # its item is known once that screen is read
                st.session_state[f"{name}-open-focused"] = True
        if moved.screen == cursor.screen and in_parts:
            if not large_view:
                st.rerun(f"{name}-focus")  # only the outline moves
            elif alone:
                st.rerun([f"{name}-large", f"{name}-focus"])  # the next item in the large view, and the focus
    elif action in keymap.DECISIONS:
        actions.decide(opened if large_view else items[cursor.index], keymap.DECISIONS[action])
        if large_view and alone:
            st.rerun(f"{name}-large")  # the grid behind it follows when it closes (see _grid_changed)
    elif action == "undo" and actions.undo is not None:
        actions.undo()
        if large_view and alone:
            st.rerun(f"{name}-large")
    elif action == "open":
        actions.open(items[cursor.index])
        if alone:
            st.rerun(f"{name}-large")
    elif action == "close" and large_view:
        actions.close()  # the whole page runs: a dialog closes only so, or by itself (see dismissed)
    elif action in ("zoom in", "zoom out"):
        zoom_by(name, 1 if action == "zoom in" else -1)
        if alone:
            st.rerun(f"{name}-large")


def dismissed(name: str):
    """The large view's `on_dismiss`: its dialog closed in the browser (Esc, its ×), which reruns the large view
    alone; the grid behind it runs again only if it changed since it was drawn."""
    actions = st.session_state.get(f"{name}-actions")
    if actions is None:
        return
    actions.close()
    if _grid_changed(name, actions):
        st.rerun()


def _grid_changed(name: str, actions: Actions) -> bool:
    """Whether the grid must be drawn again as the large view closes: something changed since it was drawn (a
    decision, an undo, a box in the large view, which reran only the large view), or it was drawn while the large
    view was open."""
    drawn = st.session_state.get(f"{name}-drawn")
    return drawn is None or drawn[1] or actions.version is None or actions.version() != drawn[0]


# -- zoom in the large view -------------------------------------------------------------------


def zoom(name: str) -> float:
    return st.session_state.get(f"{name}-zoom", keymap.ZOOMS[0])


def zoom_by(name: str, step: int):
    """One zoom level in or out; from a view fitted to its item (`{name}-fit` holds that view's own zoom), the
    level next to the fit's."""
    fit = st.session_state.pop(f"{name}-fit", None)
    current = fit if isinstance(fit, (int, float)) and not isinstance(fit, bool) else zoom(name)
    st.session_state[f"{name}-zoom"] = keymap.zoomed(current, step)


def large_view_buttons(name: str):
    """Previous, next, zoom out, the zoom, zoom in: the buttons that do what ← → − + do."""
    bar = st.container(horizontal=True, vertical_alignment="center", gap="small", width="content",
                       key=f"{name}-large-view-bar")
    for key, icon, words in (("ArrowLeft", ":material/chevron_left:", "Previous (← or k)"),
                             ("ArrowRight", ":material/chevron_right:", "Next (→ or j)")):
        if bar.button("", icon=icon, key=f"{name}-{key}", type="tertiary", help=words):
            press(name, key)
            st.rerun()  # the whole page: the large view is a dialog, which would rerun only itself
    bar.button("", icon=":material/zoom_out:", key=f"{name}-zoom-out", type="tertiary", on_click=zoom_by,
               args=(name, -1), disabled=zoom(name) <= keymap.ZOOMS[0], help="Zoom out (−)")
    bar.text(f"{zoom(name):g}×")
    bar.button("", icon=":material/zoom_in:", key=f"{name}-zoom-in", type="tertiary", on_click=zoom_by,
               args=(name, 1), disabled=zoom(name) >= keymap.ZOOMS[-1], help="Zoom in (+)")


def zoomed_image(name: str, image: bytes, height: int = 640):
    """The large view's image at the zoom: fitted to the view at 1×, larger in a box that scrolls both ways."""
    level = zoom(name)
    if level == keymap.ZOOMS[0]:
        st.image(image, width="stretch")
        return
    box = f"{name}-zoomed"
    # The image's wrappers take the box's width, the image `level` times it; the box scrolls.
    st.html(f"<style>.st-key-{box} {{ overflow: auto; }} "
            f".st-key-{box} [data-testid='stFullScreenFrame'] * {{ width: 100% !important; "
            "max-width: none !important; max-height: none !important; overflow: visible !important; } "
            f".st-key-{box} [data-testid='stImage'] img {{ width: {level * 100:g}% !important; "
            "height: auto !important; }</style>")
    with st.container(height=height, key=box):
        st.image(image, width="stretch")
