"""Whether a browser session is the person at the server: the one case in which the dashboard lets a
page change which folders the server may read.

Allowing a folder widens what every later browser request may make the server read, so it is left to
whoever could do it anyway from a shell on that machine (`python -m curation folders add`). A session is
taken for that person only when every one of these holds:

- sign-in is off (with sign-in on, people reach the dashboard from elsewhere, whatever their role);
- the server listens on a loopback address only (`server.address`);
- it answers loopback names only (`server.allowedHosts`) and takes no other origin
  (`server.corsAllowedOrigins`): a reverse proxy that brings a team needs its own name in one of them;
- the request names a loopback host (`Host` and `Origin`, which a browser always sends), and carries none of the headers a
  proxy adds (`Forwarded`, `X-Forwarded-*`, `X-Real-IP`, `Via`).

A proxy that strips all of that and rewrites Host to 127.0.0.1 looks like the person at the server; the
README says to turn on sign-in, or keep the proxy's own login, before serving a team. Standard library only.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

LOOPBACK_NAMES = {"localhost"}
PROXY_HEADERS = ("forwarded", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto", "x-real-ip", "via")


def loopback_host(host: str | None) -> bool:
    """Whether a host name or address (with or without a port, IPv6 in brackets) names this machine."""
    host = (host or "").strip().lower()
    if not host:
        return False
    if host.startswith("["):
        host = host[1:host.find("]")] if "]" in host else host[1:]
    elif host.count(":") == 1:
        host = host.split(":")[0]
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def loopback_origin(origin: str) -> bool:
    try:
        return loopback_host(urlsplit(origin.strip()).hostname)
    except ValueError:
        return False


def not_at_server(*, sign_in: bool, address: str | None, allowed_hosts: Iterable[str],
                  cors_origins: Iterable[str], headers: Mapping[str, str]) -> str | None:
    """None when the session is the person at the server; else why it is not, in a few words."""
    headers = {str(k).lower(): str(v) for k, v in headers.items()}
    if sign_in:
        return "sign-in is on"
    if not loopback_host(address):
        return "the server listens beyond this machine"
    if not all(loopback_host(host) for host in allowed_hosts):
        return "the server answers other host names (server.allowedHosts)"
    if any(not loopback_origin(origin) for origin in cors_origins):
        return "the server takes other origins (server.corsAllowedOrigins)"
    if not loopback_host(headers.get("host")):
        return "this page was not opened by this machine's address"
    if not loopback_origin(headers.get("origin", "")):  # a browser always sends it on the WebSocket
        return "this page was not opened by this machine's address"
    if any(name in headers for name in PROXY_HEADERS):
        return "this page came through a proxy"
    return None
