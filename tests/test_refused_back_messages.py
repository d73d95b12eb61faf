"""A browser's WebSocket may not send Streamlit's `clear_cache`, which empties the caches every session shares:
any session could send it by hand, a viewer's or one on the sign-in screen (pages/components/server.py)."""

import asyncio
import logging

from streamlit.proto.BackMsg_pb2 import BackMsg

from pages.components.server import RefusedBackMessages

from test_upload_route import server_with, websockets_sync, xsrf_cookie


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


def test_a_session_on_the_sign_in_screen_cannot_clear_the_servers_caches(tmp_path):
    """Against a real server: the forged message is refused (the server log says so) and the session still
    runs its script."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    with server_with(tmp_path, sign_in=True) as (process, port):
        token = xsrf_cookie(port)
        with websockets_sync.connect(f"ws://127.0.0.1:{port}/_stcore/stream", subprotocols=["streamlit", token],
                                     additional_headers={"Cookie": f"_streamlit_xsrf={token}",
                                                         "Origin": f"http://127.0.0.1:{port}"},
                                     max_size=None, open_timeout=30) as ws:
            ws.send(frame("clear_cache"))
            ws.send(frame("rerun"))
            kinds = []
            while "script_finished" not in kinds:
                message = ForwardMsg()
                message.ParseFromString(ws.recv(timeout=60))
                kinds.append(message.WhichOneof("type"))
        log = (tmp_path / "streamlit.log").read_text()
    assert "new_session" in kinds
    assert "Refused a clear_cache message from a browser" in log
