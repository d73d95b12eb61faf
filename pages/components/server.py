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
- `RefusedBackMessages`: what a browser sends on the WebSocket (Streamlit's BackMsg) is Streamlit's to handle,
  but for `clear_cache`, which empties the caches every session shares (Streamlit's "Clear cache" menu entry, shown
  in development mode only): any session could send it by hand, even one on the sign-in screen. It is dropped, and
  the server log says so; restarting the server clears them.
- `UploadGate`: Streamlit's upload route (`PUT /_stcore/upload_file/SESSION/FILE`) takes files for any live
  session, including one still on the sign-in screen, and holds them in memory until the session ends; the
  uploaders' limits apply only to what a drawn uploader reports. So the route itself takes files only for a
  curator's session, and at most `guards.uploads.ROUTE_LIMITS` bytes per request, per session and for every
  session together (held and arriving), counted as the bytes arrive: a refused request is answered before its
  body is read. A session's uploads are freed as soon as its WebSocket closes: Streamlit keeps a closed session
  about two minutes for a reconnect, its uploads with it, which held the server's bound for everyone else (a
  session that reconnects after a dropped connection uploads its files again).

The session's sign-in state is the one Streamlit keeps for its WebSocket connection (the user info of its
AppSession, read from the signed cookie when the connection opened), judged by the roles of pages/components/auth.py.
"""

from __future__ import annotations

import logging
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
REFUSED_BACK_MESSAGES = {"clear_cache"}  # BackMsg types no browser may send (see RefusedBackMessages)
log = logging.getLogger("curation.dashboard")


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


class RefusedBackMessages:
    """Drop the messages of the dashboard's WebSocket whose BackMsg type is in REFUSED_BACK_MESSAGES."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "websocket" or not WEBSOCKET_PATH.search(scope.get("path", "")):
            return await self.app(scope, receive, send)

        async def allowed():
            while True:
                message = await receive()
                kind = back_message_type(message.get("bytes")) if message["type"] == "websocket.receive" else None
                if kind not in REFUSED_BACK_MESSAGES:
                    return message
                log.warning("Refused a %s message from a browser: it would empty every session's caches", kind)

        await self.app(scope, allowed, send)


def back_message_type(data: bytes | None) -> str | None:
    """The type of the BackMsg in a WebSocket frame, None when it holds none (Streamlit refuses such a frame)."""
    from streamlit.proto.BackMsg_pb2 import BackMsg

    message = BackMsg()
    try:
        message.ParseFromString(data or b"")
    except Exception:  # noqa: BLE001 - not a BackMsg: Streamlit closes the connection itself
        return None
    return message.WhichOneof("type")


class UploadTooLarge(Exception):
    """Raised from the request's body as it arrives, once it passes a limit."""


class UploadGate:
    """Streamlit's upload route, for curators' sessions only and within RouteLimits."""

    def __init__(self, app, limits: RouteLimits = ROUTE_LIMITS):
        self.app, self.limits = app, limits
        self.arriving: dict[str, int] = {}  # bytes of requests still arriving, by session (one event loop)

    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket" and WEBSOCKET_PATH.search(scope.get("path", "")):
            try:
                return await self.app(scope, receive, send)
            finally:  # Streamlit has disconnected the session by now: its uploads go with it
                free_closed_sessions_uploads()
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
        free_closed_sessions_uploads()  # whatever closed without this middleware seeing it
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


def free_closed_sessions_uploads() -> None:
    """Drop the uploads Streamlit holds for sessions whose WebSocket is closed (Streamlit keeps such a session,
    and its uploads, for a reconnect that may never come)."""
    from streamlit.runtime import Runtime

    if not Runtime.exists():
        return
    runtime = Runtime.instance()
    manager = runtime.uploaded_file_mgr
    for session_id in list(getattr(manager, "file_storage", {})):
        if not runtime.is_active_session(session_id):
            manager.remove_session_files(session_id)


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
