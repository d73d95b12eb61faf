"""The server as deployed (`streamlit run streamlit_app.py` with the repository's .streamlit/config.toml):
it listens on 127.0.0.1 only, and refuses a request naming another host, WebSocket and HTTP alike, so a
web page whose domain was rebound to 127.0.0.1 (DNS rebinding) cannot drive or read the dashboard; its
WebSocket takes only pages of its own origin (not any page on some localhost port); and no response may be
framed by another site (clickjacking)."""

import base64
import http.client
import os
import socket

import psutil
import pytest

from server_support import streamlit_server

FOREIGN = ["rebound.attacker.example", "127.0.0.1.attacker.example", "evil"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hosts")
    env = {"CURATION_DB": str(folder / "data" / "manifest.sqlite")}
    with streamlit_server(folder / "streamlit.log", env) as (process, port):
        yield process, port


def websocket_handshake(port: int, host: str, origin: str | None = None) -> str:
    """The status line the server answers a browser's WebSocket upgrade with, sent to 127.0.0.1:`port` but
    naming `host` (Host and Origin), as a page served from `host` would (or from `origin`)."""
    key = base64.b64encode(os.urandom(16)).decode()
    request = (f"GET /_stcore/stream HTTP/1.1\r\nHost: {host}\r\nOrigin: {origin or f'http://{host}'}\r\n"
               "Upgrade: websocket\r\nConnection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: streamlit\r\n\r\n")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request.encode())
        return sock.recv(4096).decode("latin-1").split("\r\n")[0]


def http_response(port: int, host: str, path: str) -> http.client.HTTPResponse:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", path, headers={"Host": host, "Origin": f"http://{host}"})
        response = connection.getresponse()
        response.read()
        return response
    finally:
        connection.close()


def http_status(port: int, host: str, path: str) -> int:
    return http_response(port, host, path).status


def test_it_listens_on_loopback_only(server):
    process, port = server
    listening = [c.laddr for c in psutil.Process(process.pid).net_connections(kind="inet")
                 if c.status == psutil.CONN_LISTEN]
    assert listening and all(address.ip == "127.0.0.1" for address in listening), listening


@pytest.mark.parametrize("name", ["127.0.0.1", "localhost"])
def test_the_dashboard_answers_by_its_own_names(server, name):
    _, port = server
    host = f"{name}:{port}"
    assert " 101 " in websocket_handshake(port, host)
    assert http_status(port, host, "/") == 200
    assert http_status(port, host, "/_stcore/health") == 200


@pytest.mark.parametrize("name", FOREIGN)
def test_a_foreign_host_is_refused_on_the_websocket(server, name):
    _, port = server
    status = websocket_handshake(port, f"{name}:{port}")
    assert status.startswith("HTTP/1.1 4"), status


@pytest.mark.parametrize("path", ["/", "/_stcore/health", "/_stcore/host-config", "/review"])
@pytest.mark.parametrize("name", FOREIGN)
def test_a_foreign_host_is_refused_on_http(server, name, path):
    _, port = server
    assert http_status(port, f"{name}:{port}", path) == 400


@pytest.mark.parametrize("origin", ["http://localhost:3000", "http://127.0.0.1:8080", "http://localhost",
                                    "null", "https://attacker.example"])
def test_a_websocket_from_a_page_of_another_origin_is_refused(server, origin):
    """Streamlit's own check lets in any page on localhost, whatever its port: any local web server."""
    _, port = server
    status = websocket_handshake(port, f"127.0.0.1:{port}", origin)
    assert status.startswith("HTTP/1.1 403"), status


@pytest.mark.parametrize("path", ["/", "/review", "/export", "/_stcore/health", "/_stcore/host-config"])
def test_no_response_may_be_framed(server, path):
    _, port = server
    response = http_response(port, f"127.0.0.1:{port}", path)
    assert response.status == 200
    assert response.getheader("X-Frame-Options") == "DENY"
    assert "frame-ancestors 'none'" in (response.getheader("Content-Security-Policy") or "")


def test_a_components_files_may_be_framed_by_the_dashboard_only(server):
    """The Pictures view's click component is drawn in an iframe of the dashboard's own origin."""
    _, port = server
    response = http_response(port, f"127.0.0.1:{port}", "/component/any.component/index.html")
    assert response.getheader("X-Frame-Options") == "SAMEORIGIN"
    assert response.getheader("Content-Security-Policy") == "frame-ancestors 'self'"


@pytest.mark.parametrize("path", ["/review/component/x", "/review/_stcore/bidi-components/x", "/x/component/",
                                  "//component/x"])
def test_a_page_whose_path_merely_holds_component_may_not_be_framed(server, path):
    """Only the component routes' own prefix is exempt: the app served under any other path is not."""
    _, port = server
    response = http_response(port, f"127.0.0.1:{port}", path)
    assert response.getheader("X-Frame-Options") == "DENY"
    assert response.getheader("Content-Security-Policy") == "frame-ancestors 'none'"


def test_a_refused_request_may_not_be_framed_either(server):
    _, port = server
    response = http_response(port, f"rebound.attacker.example:{port}", "/")
    assert response.status == 400 and response.getheader("X-Frame-Options") == "DENY"
