"""Review's grid of cards as one element: plain-HTML cards (image, words, badges, controls, the caption box) drawn
by one component in the page itself, which sends back only what the person did (a card clicked or opened, a
decision, a caption). A browser draws a screen of these far faster than a screen of Streamlit widgets, and
redraws only the cards that changed. Streamlit only; what a card says is the page's (pages/review.py,
pages/components/pictures_view.py), built here with `html.escape` on every word, since many come from files, and
each shown as escaping.pictured shows plain text (invisible and reordering characters as their code points).

A grid uses it so:

    cards = [card_grid.Card(id=row["id"], key="picture-card-kept-12", html=card_grid.image(url, ...) + ...)]
    card_grid.show("review-pictures", cards, min_width=132, columns=8, on_event=handle)
    # handle({"type": "decide", "id": 12, "value": "exclude"}) runs as the widget's callback, before the page

The cards keep the class `st-key-<key>`, as the widget cards had, so the keyboard (pages/components/keys.py) finds,
counts and outlines them the same way.
"""

from __future__ import annotations

import functools
import html
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

import streamlit as st

from pages.components import component_values
from pages.components.escaping import pictured

# The grid lays the cards out (as many columns as fit, at most `columns`), draws a card again only when its HTML
# changed, and turns a click or a caption's Enter into one event. The cards live in the page's own DOM (no shadow
# root), so the keyboard's listener and the focus outline see them as they saw the widget cards.
GRID_JS = r"""
export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  let root = parentElement.querySelector(":scope > .cg-grid");
  if (!root) {
    root = document.createElement("div");
    root.className = "cg-grid";
    parentElement.appendChild(root);
    root.__cards = new Map();
    const send = (event) => root.__send(event);
    const cardOf = (target) => target.closest && target.closest(".cg-card");
    root.addEventListener("click", (event) => {
      const card = cardOf(event.target);
      if (!card) return;
      const control = event.target.closest("[data-event]");
      if (control && control.tagName === "INPUT") return;  // a caption box: its own event, below
      if (control && control.disabled) return;
      if (control) {
        event.preventDefault();
        send({ type: control.dataset.event, id: card.dataset.id, value: control.dataset.value || null });
      } else {
        send({ type: "select", id: card.dataset.id, value: null });
      }
    });
    root.addEventListener("change", (event) => {
      const box = event.target;
      const card = cardOf(box);
      if (card && box.dataset && box.dataset.event === "caption") {
        send({ type: "caption", id: card.dataset.id, value: box.value });
      }
    });
    root.addEventListener("keydown", (event) => {  // Enter saves the caption, as leaving the box does
      if (event.key === "Enter" && event.target.dataset && event.target.dataset.event === "caption") {
        event.target.blur();
      }
    });
  }
  root.__send = (event) => setTriggerValue("event", event);
  root.style.setProperty("--cg-columns", data.columns);
  root.style.setProperty("--cg-min", `${data.min_width}px`);
  root.style.setProperty("--cg-primary", data.primary);
  const seen = new Set();
  let before = null;
  for (const card of data.cards) {
    const id = String(card.id);
    seen.add(id);
    let element = root.__cards.get(id);
    if (!element || element.__html !== card.html || element.__class !== card.classes) {
      const fresh = document.createElement("div");
      fresh.className = `cg-card ${card.classes}`;
      fresh.dataset.id = id;
      fresh.innerHTML = card.html;
      fresh.__html = card.html;
      fresh.__class = card.classes;
      if (element) element.replaceWith(fresh);
      element = fresh;
      root.__cards.set(id, element);
    }
    const next = before ? before.nextSibling : root.firstChild;
    if (next !== element) root.insertBefore(element, next);
    before = element;
  }
  for (const [id, element] of root.__cards) {
    if (!seen.has(id)) {
      element.remove();
      root.__cards.delete(id);
    }
  }
}
"""

GRID_CSS = """
.cg-grid {display: grid; gap: 0.75rem; width: 100%;
  grid-template-columns: repeat(auto-fill, minmax(max(var(--cg-min), calc((100% - (var(--cg-columns) - 1) * 0.75rem)
    / var(--cg-columns))), 1fr));}
.cg-card {display: flex; flex-direction: column; gap: 0.25rem; min-width: 0; padding: 0.4rem; border-radius: 0.5rem;
  border: 1px solid rgba(49, 51, 63, 0.2); font-size: 0.8rem; line-height: 1.35; color: inherit; cursor: default;}
.cg-card.cg-kept {border: 3px solid #2e7d32;}
.cg-card.cg-excluded {border: 3px solid #b3261e;}
.cg-card.cg-deleted {border: 3px dashed #9e9e9e; opacity: 0.5;}
.cg-image img {display: block; width: 100%; height: auto; cursor: zoom-in;}
.cg-empty {color: rgba(49, 51, 63, 0.6);}
.cg-error {color: #b3261e;}
.cg-line {overflow: hidden; text-overflow: ellipsis; white-space: nowrap; opacity: 0.8; min-height: 1.35em;}
.cg-struck {text-decoration: line-through;}
.cg-badge {display: inline-block; border-radius: 0.3rem; padding: 0 0.3rem; margin-right: 0.2rem; font-size: 0.75rem;}
.cg-green {background: rgba(33, 195, 84, 0.15); color: #177233;}
.cg-gray {background: rgba(49, 51, 63, 0.1); color: #555867;}
.cg-violet {background: rgba(128, 61, 245, 0.12); color: #583f84;}
.cg-red {background: rgba(255, 43, 43, 0.12); color: #a51d1d;}
.cg-orange {background: rgba(255, 164, 33, 0.18); color: #8a4a00;}
.cg-blue {background: rgba(28, 131, 225, 0.12); color: #0b4f8a;}
.cg-row {display: flex; align-items: center; gap: 0.2rem; min-width: 0;}
.cg-row .cg-line {flex: 1 1 auto; min-width: 0;}
.cg-choices {display: flex; flex: 1 1 auto; min-width: 0; border: 1px solid rgba(49, 51, 63, 0.25);
  border-radius: 0.4rem; overflow: hidden;}
.cg-choices button {flex: 1 1 0; min-width: 0; border: 0; background: transparent; padding: 0.15rem 0;
  font: inherit; font-weight: 600; cursor: pointer; color: inherit;}
.cg-choices button + button {border-left: 1px solid rgba(49, 51, 63, 0.25);}
.cg-choices button[aria-pressed='true'] {color: var(--cg-primary); box-shadow: inset 0 0 0 2px var(--cg-primary);}
.cg-tool {border: 0; background: transparent; padding: 0.1rem 0.25rem; font: inherit; cursor: pointer;
  color: inherit; border-radius: 0.3rem; flex: 0 0 auto;}
.cg-tool:hover, .cg-choices button:hover:not(:disabled) {background: rgba(49, 51, 63, 0.08);}
.cg-ask {background: var(--cg-primary); color: white;}
.cg-card button:disabled, .cg-card input:disabled {cursor: not-allowed; opacity: 0.45;}
.cg-caption {width: 100%; box-sizing: border-box; font: inherit; padding: 0.2rem 0.35rem; border-radius: 0.4rem;
  border: 1px solid rgba(49, 51, 63, 0.25); background: transparent; color: inherit;}
.cg-zoom .cg-image img {transition: transform 0.12s ease 0s;}
.cg-zoom .cg-image img:hover {transform: scale(2); position: relative; z-index: 20;
  box-shadow: 0 4px 24px rgba(0,0,0,.35); transition-delay: 0.4s;}
"""

_grid = st.components.v2.component("curation_card_grid", js=GRID_JS, css=GRID_CSS, isolate_styles=False)

EVENT_TYPES = {"select", "open", "decide", "caption", "like", "copy", "replace"}


@dataclass(frozen=True)
class Card:
    """One card: `id` names it in the events, `key` is its class after "st-key-" (the keyboard's focus finds it
    by that), `html` what it shows (escaped already: see the builders below), `classes` more of its classes
    (its border: cg-kept, cg-excluded, cg-deleted; cg-zoom: its picture larger on hover)."""

    id: Hashable
    key: str
    html: str
    classes: str = ""


def show(name: str, cards: Sequence[Card], *, min_width: int, columns: int,
         on_event: Callable[[dict], None]) -> None:
    """Draw `cards` as one grid; `on_event({"type", "id", "value"})` runs, as a callback, for what the person
    does: `type` is one of EVENT_TYPES, `id` the card's id (as a string: see `item_of`)."""
    data = {"columns": columns, "min_width": min_width, "primary": st.get_option("theme.primaryColor") or "#ff4b4b",
            "cards": [{"id": str(card.id), "classes": f"st-key-{card.key} {card.classes}".strip(), "html": card.html}
                      for card in cards]}
    _grid(key=f"{name}-grid", data=data, on_event_change=functools.partial(_on_event, name, on_event),
          width="stretch", height="content")


def _on_event(name: str, on_event: Callable[[dict], None]):
    event = component_values.card_event(st.session_state.get(f"{name}-grid"), EVENT_TYPES)
    if event is not None:
        on_event(event)  # anything else is not ours: a stale or forged message does nothing


def item_of(event: dict, items: Sequence[Hashable]) -> Hashable | None:
    """The item of `items` (the cards drawn) an event names, or None (a card no longer on the screen)."""
    return next((item for item in items if str(item) == event["id"]), None)


# -- the HTML of a card: every word escaped -----------------------------------------------------------


def _escaped(words: str) -> str:
    """`words` as HTML text that shows them as they are (see escaping.pictured): a name can neither reorder
    the card's own words nor look like another."""
    return html.escape(pictured(words))


def media_url(data: bytes, where: str) -> str:
    """`data` (a JPEG or PNG) served as st.image serves it, at a URL named by its content, so the browser keeps
    it while it stays the same; `where` names its place (one per card) for Streamlit's media store."""
    from streamlit import runtime

    mimetype = "image/png" if data[:4] == b"\x89PNG" else "image/jpeg"
    if not runtime.exists():  # AppTest: nothing serves media
        return ""
    return runtime.get_instance().media_file_mgr.add(data, mimetype, f"card-grid-{where}")


def image(url: str, words: str) -> str:
    """The card's picture; a click on it opens the large view."""
    return (f'<div class="cg-image"><img src="{html.escape(url)}" alt="{_escaped(words)}" '
            f'data-event="open" title="Open: see it large"></div>')


def note(words: str, css: str = "cg-empty") -> str:
    return f'<div class="{css}">{_escaped(words)}</div>'


def line(*parts: str, title: str | None = None, css: str = "cg-line") -> str:
    """A muted line, cut with "…" where the card is narrow; `parts` are HTML already (see text, bold, badge)."""
    tip = f' title="{_escaped(title)}"' if title else ""
    return f'<div class="{css}"{tip}>{"".join(parts) or "&#8203;"}</div>'


def text(words: str) -> str:
    return _escaped(words)


def bold(words: str) -> str:
    return f"<b>{_escaped(words)}</b>"


def badge(words: str, colour: str) -> str:
    return f'<span class="cg-badge cg-{colour}">{html.escape(words)}</span>'


def button(event: str, label: str, title: str, *, value: str | None = None, pressed: bool | None = None,
           disabled: bool = False, css: str = "cg-tool", name: str | None = None) -> str:
    """A control on the card: a click sends `event` (with `value`); `name` is what a screen reader (and a test)
    calls it, `title` its tooltip."""
    attributes = [f'type="button" class="{css}" data-event="{html.escape(event)}"',
                  f'title="{html.escape(title)}" aria-label="{html.escape(name or title)}"']
    if value is not None:
        attributes.append(f'data-value="{html.escape(value)}"')
    if pressed is not None:
        attributes.append(f'aria-pressed="{"true" if pressed else "false"}"')
    if disabled:
        attributes.append("disabled")
    return f'<button {" ".join(attributes)}>{html.escape(label)}</button>'


CHOICE_LABELS = {"include": ("+", "Include"), "auto": ("A", "Auto"), "exclude": ("−", "Exclude")}


def choices(chosen: str, title: str, *, disabled: bool = False) -> str:
    """Include / Auto / Exclude, the chosen one pressed: one control, as wide as the card allows."""
    buttons = "".join(button("decide", label, f"{name}. {title}", value=choice, pressed=choice == chosen,
                             disabled=disabled, css="", name=name)
                      for choice, (label, name) in CHOICE_LABELS.items())
    return f'<div class="cg-choices" role="group" aria-label="Decision">{buttons}</div>'


def row(*parts: str) -> str:
    return f'<div class="cg-row">{"".join(parts)}</div>'


def caption_box(caption: str | None, placeholder: str, title: str, max_chars: int, *, disabled: bool = False) -> str:
    """The caption, saved when the person presses Enter or leaves the box (the grid sends "caption")."""
    return (f'<input class="cg-caption" type="text" data-event="caption" aria-label="Caption" '
            f'value="{html.escape(caption or "")}" placeholder="{html.escape(placeholder)}" '
            f'title="{html.escape(title)}" maxlength="{int(max_chars)}"{" disabled" if disabled else ""}>')
