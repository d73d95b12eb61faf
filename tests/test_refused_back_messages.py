"""A browser's WebSocket may not send Streamlit's `clear_cache`, which empties the caches every session shares:
any session could send it by hand, a viewer's or one on the sign-in screen (pages/components/server.py)."""

import asyncio
import contextlib
import logging
import re
import time
import urllib.request

from streamlit.proto.BackMsg_pb2 import BackMsg

from curation import Manifest
from curation.sources import paths
from pages.components.server import RefusedBackMessages

from test_upload_route import browser_socket, server_with


def frame(kind: str) -> bytes:
    message = BackMsg()
    if kind == "clear_cache":
        message.clear_cache = True
    else:
        message.rerun_script.query_string = ""
    return message.SerializeToString()


def passed_on(frames: list[bytes]) -> list[str]:
    """The BackMsg types the app behind RefusedBackMessages receives of `frames`, sent on the dashboard's
    WebSocket."""
    incoming = [{"type": "websocket.connect"}] + [{"type": "websocket.receive", "bytes": data} for data in frames]
    incoming.append({"type": "websocket.disconnect", "code": 1000})
    received = []

    async def app(scope, receive, send):
        while (message := await receive())["type"] != "websocket.disconnect":
            if message["type"] == "websocket.receive":
                parsed = BackMsg()
                parsed.ParseFromString(message["bytes"])
                received.append(parsed.WhichOneof("type"))

    async def receive():
        return incoming.pop(0)

    async def send(message):
        pass

    asyncio.run(RefusedBackMessages(app)({"type": "websocket", "path": "/_stcore/stream"}, receive, send))
    return received


def test_clear_cache_never_reaches_streamlit_and_the_session_goes_on(caplog):
    with caplog.at_level(logging.WARNING, logger="curation.dashboard"):
        assert passed_on([frame("rerun"), frame("clear_cache"), frame("rerun")]) == ["rerun_script", "rerun_script"]
    assert "Refused a clear_cache message" in caplog.text


def test_a_frame_that_is_no_back_message_is_left_to_streamlit():
    received = []

    async def app(scope, receive, send):
        received.append(await receive())

    async def receive():
        return {"type": "websocket.receive", "bytes": b"\xff\xff not protobuf"}

    asyncio.run(RefusedBackMessages(app)({"type": "websocket", "path": "/_stcore/stream"}, receive, None))
    assert received == [{"type": "websocket.receive", "bytes": b"\xff\xff not protobuf"}]


def run_page(ws, page_name: str = "") -> None:
    """Run `page_name` (a page's address; "" for Home) in the session of `ws` as a browser does, to its end (not
    the end of a run cut short for another: a fresh server's first run runs again under the entry script's
    navigation, see common.use_entry_script)."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    rerun = BackMsg()
    rerun.rerun_script.query_string = ""
    rerun.rerun_script.page_name = page_name
    ws.send(rerun.SerializeToString())
    while True:
        message = ForwardMsg()
        message.ParseFromString(ws.recv(timeout=60))
        if message.WhichOneof("type") == "script_finished" and message.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
            return


def cached_data(port: int) -> list[str]:
    """The st.cache_data caches that hold something, as the server's metrics say (they are kept 5 s)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/metrics?families=cache_memory_bytes") as answer:
        text = answer.read().decode()
    return re.findall(r'cache_type="st_cache_data",cache="([^"]+)"\} [1-9]', text)


def test_a_forged_clear_cache_leaves_the_shared_caches_as_they_were(tmp_path):
    """Against a real server: one session fills a cache (Ingest counts a source's PDFs), another sends clear_cache
    by hand; the cache still holds what it held, the server log says why, and the sender's session goes on."""
    db = tmp_path / "data" / "manifest.sqlite"
    (tmp_path / "data" / "archive").mkdir(parents=True)
    with Manifest(db, create=True) as manifest:
        paths.add_source(manifest, tmp_path / "data" / "archive")
    with server_with(tmp_path, sign_in=False) as (process, port), contextlib.ExitStack() as sessions:
        first, second = (sessions.enter_context(browser_socket(port))[0] for _ in range(2))
        run_page(first, "ingest")
        before = cached_data(port)
        second.send(frame("clear_cache"))
        run_page(second)  # its own run is not disturbed
        time.sleep(5.5)  # past the metrics' own 5 s
        after = cached_data(port)
    assert before and any("source_stats" in cache for cache in before), before
    assert after == before
    assert "Refused a clear_cache message from a browser" in (tmp_path / "streamlit.log").read_text()
