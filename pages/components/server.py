"""What the server checks on every request before Streamlit answers it (streamlit_app.py adds these as ASGI
middleware, outermost first):

- `NoFraming`: every response forbids other sites to frame the dashboard (`Content-Security-Policy:
  frame-ancestors 'none'` and `X-Frame-Options: DENY`), so a click on another site cannot land on a button
  of the dashboard drawn invisibly under it (clickjacking). The one exception is a component's own files
  (paths that start with `/component/` or `/_stcore/bidi-components/`, under `server.baseUrlPath`), which the
  dashboard's pages draw in an iframe of their own: only the dashboard's own origin may frame those
  (`'self'`, `SAMEORIGIN`).
- `SameOriginWebSocket`: a browser's WebSocket is accepted only from a page of the dashboard's own origin
  (its Origin names the Host it connects to), or one listed in `server.corsAllowedOrigins`. Streamlit's own
  check lets in a page from any port on localhost: any local web server, or a page it serves, could drive
  the dashboard.
- `UploadGate`: Streamlit's upload route (`PUT /_stcore/upload_file/SESSION/FILE`) takes files for any live
  session, including one still on the sign-in screen, and holds them in memory until the session ends; the
  uploaders' limits apply only to what a drawn uploader reports. So the route itself takes files only for a
  curator's session, and at most `guards.uploads.ROUTE_LIMITS` bytes per request, per session and for every
  session together (held and arriving), counted as the bytes arrive: a refused request is answered before its
  body is read.

The session's sign-in state is the one Streamlit keeps for its WebSocket connection (the user info of its
AppSession, read from the signed cookie when the connection opened), judged by the roles of pages/components/auth.py.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import urlsplit

import streamlit as st

from guards.uploads import ROUTE_LIMITS, RouteLimits, megabytes
from pages.components import auth

FRAME_HEADERS = [(b"content-security-policy", b"frame-ancestors 'none'"), (b"x-frame-options", b"DENY")]
# What Streamlit serves for its pages' own iframes (custom components such as the Pictures view's clicks): the
# routes' prefixes, under server.baseUrlPath, never these words elsewhere in a path (`/review/component/x` is
# the app).
SELF_FRAMED_ROUTES = ("component/", "_stcore/bidi-components/")
SELF_FRAME_HEADERS = [(b"content-security-policy", b"frame-ancestors 'self'"), (b"x-frame-options", b"SAMEORIGIN")]
UPLOAD_PATH = re.compile(r"/_stcore/upload_file/(?P<session>[^/]+)/[^/]+/?$")
WEBSOCKET_PATH = re.compile(r"/_stcore/stream/?$")


class NoFraming:
    """Every HTTP response carries the headers that forbid framing (any earlier X-Frame-Options replaced);
    a component's files may be framed by the dashboard's own pages only."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        frame_headers = SELF_FRAME_HEADERS if self_framed(scope.get("path", "")) else FRAME_HEADERS

        async def framed(message):
            if message["type"] == "http.response.start":
                kept = [(name, value) for name, value in message.get("headers", [])
                        if name.lower() != b"x-frame-options"]
                message = {**message, "headers": kept + frame_headers}
            await send(message)

        await self.app(scope, receive, framed)


def self_framed(path: str) -> bool:
    """Whether `path` is one of a component's own files: it starts with a component route's prefix."""
    base = str(st.get_option("server.baseUrlPath") or "").strip("/")
    root = f"/{base}/" if base else "/"
    return any(path.startswith(root + route) for route in SELF_FRAMED_ROUTES)


class SameOriginWebSocket:
    """Refuse (HTTP 403) a WebSocket whose Origin is not the dashboard's own or an allowed one."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket" and WEBSOCKET_PATH.search(scope.get("path", "")):
            headers = _headers(scope)
            if not origin_allowed(headers.get("origin"), headers.get("host")):
                await receive()  # the client's connect
                await send({"type": "websocket.close", "code": 1008})  # before accepting: a 403
                return
        await self.app(scope, receive, send)


def origin_allowed(origin: str | None, host: str | None) -> bool:
    """Whether a WebSocket from a page of `origin` may connect to `host` (already one of allowedHosts).
    No Origin: not a browser (a browser always sends it), so no visitor's page can be behind it."""
    if origin is None:
        return True
    if host and urlsplit(origin).netloc.lower() == host.lower():
        return True
    allowed = st.get_option("server.corsAllowedOrigins") or []
    return origin.rstrip("/") in {str(entry).rstrip("/") for entry in allowed}


class UploadTooLarge(Exception):
    """Raised from the request's body as it arrives, once it passes a limit."""


class UploadGate:
    """Streamlit's upload route, for curators' sessions only and within RouteLimits."""

    def __init__(self, app, limits: RouteLimits = ROUTE_LIMITS):
        self.app, self.limits = app, limits
        self.arriving: dict[str, int] = {}  # bytes of requests still arriving, by session (one event loop)

    async def __call__(self, scope, receive, send):
        match = UPLOAD_PATH.search(scope.get("path", "")) if scope["type"] == "http" else None
        if match is None or scope["method"] != "PUT":
            return await self.app(scope, receive, send)
        session = match["session"]
        refusal = self.refusal(session, _headers(scope).get("content-length"))
        if refusal is not None:
            return await _answer(send, *refusal)
        received = [0]  # this request's bytes so far, which self.arriving holds too until it ends
        try:
            await self.app(scope, self.counted(session, receive, received), send)
        except UploadTooLarge as exc:  # raised before Streamlit answered: it kept nothing
            await _answer(send, 413, str(exc))
        finally:
            self.arriving[session] = self.arriving.get(session, 0) - received[0]
            if self.arriving[session] <= 0:
                del self.arriving[session]

    def refusal(self, session: str, length: str | None) -> tuple[int, str] | None:
        """(status, why) when the request is refused before its body is read; None to let it in."""
        user = _session_user(session)
        if user is None:
            return None  # no live session: Streamlit answers that itself, before reading the body
        if auth.role_of_user(user) != auth.CURATOR:
            return 403, "Uploads are taken only from a curator's session: sign in first."
        try:
            return self.over_limits(session, int(length or 0))
        except ValueError:
            return 400, "Content-Length is not a number."

    def over_limits(self, session: str, size: int, so_far: int = 0) -> tuple[int, str] | None:
        """Why `size` more bytes of a request that brought `so_far` would pass a limit, or None."""
        if so_far + size > self.limits.request_bytes:
            return 413, f"One upload may be at most {megabytes(self.limits.request_bytes)}."
        if _held(session) + self.arriving.get(session, 0) + size > self.limits.session_bytes:
            return 413, (f"This session's uploads would pass {megabytes(self.limits.session_bytes)}; remove some "
                         "files first.")
        if _held() + sum(self.arriving.values()) + size > self.limits.server_bytes:
            return 413, ("The server holds as many uploads as it takes at once "
                         f"({megabytes(self.limits.server_bytes)}, every session's together); try again once "
                         "others' uploads are saved.")
        return None

    def counted(self, session: str, receive, received: list[int]):
        """`receive`, counting the body's bytes against the limits as they arrive (Content-Length may lie)."""

        async def counting():
            message = await receive()
            size = len(message.get("body", b""))
            refused = self.over_limits(session, size, received[0]) if size else None
            if refused is not None:
                raise UploadTooLarge(refused[1])
            received[0] += size
            self.arriving[session] = self.arriving.get(session, 0) + size
            return message

        return counting


def _session_user(session_id: str) -> Mapping | None:
    """The live session's sign-in state, None without such a session: the user info Streamlit keeps for its
    connection (Streamlit 1.67 keeps it on the AppSession as `_user_info`; were it gone, the session would
    count as signed out, never as signed in)."""
    from streamlit.runtime import Runtime

    if not Runtime.exists():
        return None
    session = Runtime.instance().get_app_session(session_id)
    if session is None:
        return None
    user = getattr(session, "_user_info", None)
    return dict(user) if isinstance(user, Mapping) else {}


def _held(session_id: str | None = None) -> int:
    """Bytes Streamlit holds in memory for the session's uploads (None: every session's)."""
    from streamlit.runtime import Runtime

    storages = getattr(Runtime.instance().uploaded_file_mgr, "file_storage", {})
    sessions = list(storages.values()) if session_id is None else [storages.get(session_id) or {}]
    return sum(len(record.data) for storage in sessions for record in list(storage.values()))


def _headers(scope) -> dict[str, str]:
    return {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope.get("headers", [])}


async def _answer(send, status: int, text: str) -> None:
    body = text.encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})
