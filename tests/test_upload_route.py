"""Streamlit's upload route (`PUT /_stcore/upload_file/SESSION/FILE`) against a real server: it takes files
only for a curator's session, and at most so many bytes per request and per session, whatever uploader the
request claims to be for. A session still on the sign-in screen gets nothing in: its uploads are refused
before their bodies are read, and the server's memory stays where it was.

The sessions are made as a browser makes them, by hand: the XSRF cookie from the health route, a WebSocket
to /_stcore/stream, a rerun request, and the session id from the server's first message."""

import concurrent.futures
import contextlib
import http.client
import re
import socket
import uuid

import psutil
import pytest

from server_support import free_port, streamlit_server

websockets_sync = pytest.importorskip("websockets.sync.client")

from guards.uploads import MB  # noqa: E402  (as Streamlit counts: 2**20 bytes)
SECRETS = """
[auth]
redirect_uri = "http://127.0.0.1:{port}/oauth2callback"
cookie_secret = "a-cookie-secret-for-this-test-only"
client_id = "curation-dashboard"
client_secret = "a-client-secret-for-this-test-only"
server_metadata_url = "http://127.0.0.1:9/.well-known/openid-configuration"

[curation]
curators = ["ana@example.org"]
viewers = ["*@example.org"]
"""


@contextlib.contextmanager
def server_with(tmp_path, sign_in: bool, **env):
    port = free_port()
    options = []
    if sign_in:
        secrets = tmp_path / "secrets.toml"
        secrets.write_text(SECRETS.format(port=port))
        options = ["--secrets.files", str(secrets)]
    env = {"CURATION_DB": str(tmp_path / "data" / "manifest.sqlite"), **env}
    with streamlit_server(tmp_path / "streamlit.log", env, *options, port=port) as (process, port):
        yield process, port


def xsrf_cookie(port: int) -> str:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", "/_stcore/health")
        response = connection.getresponse()
        response.read()
        return re.search(r"_streamlit_xsrf=([^;]+)", response.getheader("Set-Cookie")).group(1)
    finally:
        connection.close()


@contextlib.contextmanager
def browser_socket(port: int):
    """(a WebSocket to the dashboard as a browser opens one: its XSRF cookie, its Origin; the XSRF token)."""
    token = xsrf_cookie(port)
    with websockets_sync.connect(f"ws://127.0.0.1:{port}/_stcore/stream", subprotocols=["streamlit", token],
                                 additional_headers={"Cookie": f"_streamlit_xsrf={token}",
                                                     "Origin": f"http://127.0.0.1:{port}"},
                                 max_size=None, open_timeout=30) as ws:
        yield ws, token


@contextlib.contextmanager
def live_session(port: int):
    """(session id, XSRF token) of a session a browser would open: not signed in."""
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    with browser_socket(port) as (ws, token):
        rerun = BackMsg()
        rerun.rerun_script.query_string = ""
        ws.send(rerun.SerializeToString())
        while True:
            message = ForwardMsg()
            message.ParseFromString(ws.recv(timeout=60))
            if message.WhichOneof("type") == "new_session":
                break
        yield message.new_session.initialize.session_id, token


def put_upload(port: int, session: str, token: str, size: int, expect_continue: bool = True) -> tuple[int, str]:
    """PUT a `size`-byte file to the upload route as the browser's uploader does; (status, body).

    With `expect_continue` the body is sent only once the server asks for it (HTTP's Expect: 100-continue):
    a refusal before the body is read is then certain to be heard. Without it the whole body is sent
    regardless, as an attacker's client would."""
    boundary = uuid.uuid4().hex
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.pdf\"\r\n"
            "Content-Type: application/pdf\r\n\r\n").encode()
    tail = f"\r\n--{boundary}--\r\n".encode()
    length = len(head) + size + len(tail)
    request = (f"PUT /_stcore/upload_file/{session}/{uuid.uuid4()} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
               f"Content-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {length}\r\n"
               f"Cookie: _streamlit_xsrf={token}\r\nX-Xsrftoken: {token}\r\n"
               + ("Expect: 100-continue\r\n" if expect_continue else "") + "\r\n").encode()
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(request)
        if expect_continue:
            first = read_response(sock)
            if not first[0] == 100:
                return first
        try:
            sock.sendall(head)
            chunk = bytes(1 << 20)
            for start in range(0, size, len(chunk)):
                sock.sendall(chunk[:min(len(chunk), size - start)])
            sock.sendall(tail)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed without reading the rest
        try:
            return read_response(sock)
        except (ConnectionResetError, ValueError):
            return 0, "connection closed"


def read_response(sock) -> tuple[int, str]:
    data = b""
    while b"\r\n\r\n" not in data:
        piece = sock.recv(65536)
        if not piece:
            raise ValueError("no response")
        data += piece
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split()[1])
    if status == 100:
        return 100, ""
    length = re.search(rb"content-length: (\d+)", head, re.IGNORECASE)
    while length and len(body) < int(length.group(1)):
        piece = sock.recv(65536)
        if not piece:
            break  # the server closed after its answer, with the unread upload still arriving
        body += piece
    return status, body.decode(errors="replace")


def resident_mb(process) -> float:
    return psutil.Process(process.pid).memory_info().rss / 2**20


def test_an_upload_for_a_session_on_the_sign_in_screen_is_refused_and_memory_stays(tmp_path):
    with server_with(tmp_path, sign_in=True) as (process, port), live_session(port) as (session, token):
        assert put_upload(port, session, token, 1_000)[0] == 403  # told before sending the body
        status, body = put_upload(port, session, token, 1_000)
        assert status == 403 and "only from a curator's session" in body
        before = resident_mb(process)
        statuses = [put_upload(port, session, token, 60 * MB, expect_continue=False)[0] for _ in range(4)]
        grown = resident_mb(process) - before
    assert set(statuses) <= {403, 0}, statuses  # refused (or cut off once refused)
    assert grown < 40, f"the server grew by {grown:.0f} MB"  # 240 MB were sent; Streamlit would hold them all


def test_a_curators_uploads_are_bounded_per_request_and_per_session(tmp_path):
    """Sign-in off: the person at the server is a curator. The route's limits are the uploaders' together:
    here 1 MB a PDF, 2 MB a session's PDFs, 1 MB a session's photos."""
    env = {"CURATION_UPLOAD_MAX_FILE_MB": "1", "CURATION_UPLOAD_MAX_SESSION_MB": "2",
           "VET_UPLOAD_MAX_FILE_MB": "0.5", "VET_UPLOAD_MAX_SESSION_MB": "1"}
    with server_with(tmp_path, sign_in=False, **env) as (process, port), live_session(port) as (session, token):
        assert put_upload(port, session, token, 900_000)[0] == 204  # taken
        status, body = put_upload(port, session, token, 1_200_000)
        assert status == 413 and "One upload may be at most" in body
        assert put_upload(port, session, token, 900_000)[0] == 204
        assert put_upload(port, session, token, 900_000)[0] == 204  # 2.7 MB held: within 3 MB
        status, body = put_upload(port, session, token, 900_000)
        assert status == 413 and "This session's uploads would pass" in body
        status, _ = put_upload(port, session, token, 1_200_000, expect_continue=False)  # Content-Length heeded or not
        assert status in (413, 0)
        assert put_upload(port, "no-such-session", token, 1_000)[0] == 400  # Streamlit's own answer


def test_a_body_longer_than_its_content_length_claims_is_cut_off(tmp_path):
    """Chunked, with no Content-Length: the bytes are counted as they arrive."""
    env = {"CURATION_UPLOAD_MAX_FILE_MB": "1", "VET_UPLOAD_MAX_FILE_MB": "0.5"}
    with server_with(tmp_path, sign_in=False, **env) as (process, port), live_session(port) as (session, token):
        boundary = "b" * 16
        head = (f"PUT /_stcore/upload_file/{session}/f1 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                f"Content-Type: multipart/form-data; boundary={boundary}\r\nTransfer-Encoding: chunked\r\n"
                f"Cookie: _streamlit_xsrf={token}\r\nX-Xsrftoken: {token}\r\n\r\n").encode()
        part = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x.pdf\"\r\n\r\n").encode()
        with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
            sock.sendall(head)
            try:
                for piece in [part] + [bytes(256 * 1024)] * 8:  # 2 MB in all
                    sock.sendall(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            except (BrokenPipeError, ConnectionResetError):
                pass
            status, body = read_response(sock)
    assert status == 413 and "One upload may be at most" in body



def test_many_sessions_uploading_at_once_stay_under_the_servers_bound(tmp_path):
    """Each session within its own limits (3 MB here), but five sessions sending two files each at once: the
    server takes no more than CURATION_UPLOAD_MAX_SERVER_MB (2.5 MB) in all, held and arriving together."""
    env = {"CURATION_UPLOAD_MAX_FILE_MB": "1", "CURATION_UPLOAD_MAX_SESSION_MB": "2",
           "VET_UPLOAD_MAX_FILE_MB": "0.5", "VET_UPLOAD_MAX_SESSION_MB": "1", "CURATION_UPLOAD_MAX_SERVER_MB": "2.5"}
    size = 900_000
    with server_with(tmp_path, sign_in=False, **env) as (process, port), contextlib.ExitStack() as stack:
        sessions = [stack.enter_context(live_session(port)) for _ in range(5)]
        with concurrent.futures.ThreadPoolExecutor(10) as pool:
            answers = list(pool.map(lambda args: put_upload(port, *args, size, expect_continue=False),
                                    [session for session in sessions for _ in range(2)]))
        taken = [status for status, _ in answers if status == 204]
        refused = [body for status, body in answers if status == 413]
        assert len(taken) * size <= 2_500_000 and taken, answers  # 9 MB were sent; 2 files fit
        assert len(taken) + len(refused) + [status for status, _ in answers].count(0) == 10, answers
        assert any("every session's together" in body for body in refused), refused
        session, token = sessions[-1]
        status, body = put_upload(port, session, token, size)  # told before it sends: the server is full
        assert status == 413 and "The server holds as many uploads as it takes at once" in body


def test_a_closed_sessions_uploads_are_freed_when_it_goes(tmp_path):
    """Streamlit keeps a closed session about two minutes for a reconnect, and its uploads with it: a few
    throw-away sessions held the server's bound (2.5 MB here) and every new session got 413 until they expired.
    A session's uploads are freed as its WebSocket closes."""
    env = {"CURATION_UPLOAD_MAX_FILE_MB": "1", "CURATION_UPLOAD_MAX_SESSION_MB": "2",
           "VET_UPLOAD_MAX_FILE_MB": "0.5", "VET_UPLOAD_MAX_SESSION_MB": "1", "CURATION_UPLOAD_MAX_SERVER_MB": "2.5"}
    size = 900_000
    with server_with(tmp_path, sign_in=False, **env) as (process, port):
        with live_session(port) as (session, token):
            assert [put_upload(port, session, token, size)[0] for _ in range(2)] == [204, 204]
        with live_session(port) as (session, token):  # the first one closed a moment ago
            answers = [put_upload(port, session, token, size) for _ in range(2)]
    assert [status for status, _ in answers] == [204, 204], answers
