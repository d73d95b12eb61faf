"""The server as deployed (`streamlit run streamlit_app.py` with the repository's .streamlit/config.toml):
it listens on 127.0.0.1 only, and refuses a request naming another host, WebSocket and HTTP alike, so a
web page whose domain was rebound to 127.0.0.1 (DNS rebinding) cannot drive or read the dashboard."""

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


def websocket_handshake(port: int, host: str) -> str:
    """The status line the server answers a browser's WebSocket upgrade with, sent to 127.0.0.1:`port` but
    naming `host` (Host and Origin), as a page served from `host` would."""
    key = base64.b64encode(os.urandom(16)).decode()
    request = (f"GET /_stcore/stream HTTP/1.1\r\nHost: {host}\r\nOrigin: http://{host}\r\n"
               "Upgrade: websocket\r\nConnection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: streamlit\r\n\r\n")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request.encode())
        return sock.recv(4096).decode("latin-1").split("\r\n")[0]


def http_status(port: int, host: str, path: str) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", path, headers={"Host": host, "Origin": f"http://{host}"})
        return connection.getresponse().status
    finally:
        connection.close()


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
