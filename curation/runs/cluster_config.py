"""Which Dask cluster ingest runs on, as the server's configuration says, checked without connecting.

The address comes from the server's environment (`$CURATION_CLUSTER`) or the command line
(`--cluster`), never from a browser: a Dask client runs what a scheduler sends it (its messages are
pickles), so whoever picks the address picks the code this server runs. For the same reason a
scheduler on another machine is reached only over TLS, with the certificate files named in the
environment: the scheduler must show a certificate signed by the cluster's CA, and this server shows
its own. Only a scheduler on this machine's loopback may be plain `tcp://`.

No Dask import here: the Ingest page shows the setting with these checks and never connects.
"""

from __future__ import annotations

import ipaddress
import os
import urllib.parse

ADDRESS_ENV = "CURATION_CLUSTER"
TLS_CA_ENV = "CURATION_CLUSTER_TLS_CA_FILE"
TLS_CERT_ENV = "CURATION_CLUSTER_TLS_CERT"
TLS_KEY_ENV = "CURATION_CLUSTER_TLS_KEY"
TLS_ENVS = (TLS_CA_ENV, TLS_CERT_ENV, TLS_KEY_ENV)
LOCAL = "local"
LOOPBACK = "127.0.0.1"
DASHBOARD_PORT = 8787
HOW_TO_CHANGE = (f"The server's administrator sets it: `{ADDRESS_ENV}` in the environment of the server "
                 "(`tls://HOST:8786` with the TLS files in "
                 f"`{TLS_CA_ENV}`, `{TLS_CERT_ENV}`, `{TLS_KEY_ENV}`; or `local:N`), then restarts it; "
                 "empty: worker processes on this server.")


class ClusterError(Exception):
    """A cluster that cannot be used: refused, unreachable, no workers, or workers that cannot see the files."""


def configured_address() -> str:
    """The cluster the server's jobs run on: `$CURATION_CLUSTER` ('': this server's process pool)."""
    return os.environ.get(ADDRESS_ENV, "").strip()


def local_workers(address: str) -> int | None:
    """N for `local:N` (the cores here for `local`), None for a scheduler address."""
    name, _, count = address.partition(":")
    if name != LOCAL:
        return None
    if not count:
        from .worker_pool import default_workers

        return default_workers()
    if not count.isdigit() or int(count) < 1:
        raise ClusterError(f"`{address}`: write local or local:N with N a number of workers, like local:4")
    return int(count)


def scheduler_host(address: str) -> tuple[str, str]:
    """(protocol, host) of a scheduler address; Dask takes `HOST:PORT` without a protocol as tcp."""
    protocol, sep, rest = address.partition("://")
    if not sep:
        protocol, rest = "tcp", address
    host = urllib.parse.urlsplit(f"//{rest}").hostname if rest else None
    if protocol not in ("tcp", "tls") or not host:
        raise ClusterError(f"`{address}` is not a Dask scheduler address: write tls://HOST:8786, or local:N "
                           "for worker processes on this server")
    return protocol, host


def is_loopback(host: str) -> bool:
    """This machine by its own name or address; any other name is another machine (nothing is looked up)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def tls_files() -> dict[str, str]:
    """The TLS files the environment names, each checked to be a readable file."""
    missing = [name for name in TLS_ENVS if not os.environ.get(name, "").strip()]
    if missing:
        raise ClusterError(f"a tls:// scheduler needs the cluster's CA and this server's certificate and key: "
                           f"set {', '.join(missing)} to their PEM files (see docs/cluster.md, Past one machine)")
    files = {name: os.environ[name].strip() for name in TLS_ENVS}
    for name, path in files.items():
        if not os.path.isfile(path) or not os.access(path, os.R_OK):
            raise ClusterError(f"{name} names {path}, which is not a file this server can read")
    return files


def check_address(address: str) -> None:
    """Raise ClusterError, before any connection, for an address the server must not use.

    A plain tcp:// scheduler on another machine is refused: anyone on the way, or at that address,
    could answer in the scheduler's place. A tls:// one needs the TLS files.
    """
    if local_workers(address) is not None:
        return
    protocol, host = scheduler_host(address)
    if protocol == "tls":
        tls_files()
    elif not is_loopback(host):
        raise ClusterError(
            f"`{address}` is a plain tcp:// scheduler on another machine, refused: Dask's tcp is neither "
            f"encrypted nor authenticated, and a client runs what its scheduler sends. Use TLS: start the "
            f"scheduler and workers with --tls-ca-file, --tls-cert and --tls-key, write tls://{host}:PORT, "
            f"and set {', '.join(TLS_ENVS)} on this server (see docs/cluster.md, Past one machine)")


def security(address: str):
    """The `distributed.Security` for a checked scheduler address: TLS from the environment for tls://,
    None (plain tcp on loopback) otherwise."""
    if scheduler_host(address)[0] != "tls":
        return None
    from distributed import Security

    files = tls_files()
    return Security(tls_ca_file=files[TLS_CA_ENV], tls_client_cert=files[TLS_CERT_ENV],
                    tls_client_key=files[TLS_KEY_ENV], require_encryption=True)


def describe(address: str) -> str:
    """One line about a configured address, without connecting: what a job will use, or why it is refused."""
    check_address(address)
    workers = local_workers(address)
    if workers is not None:
        return (f"{workers} Dask worker processes start on this server with each job, reached over TLS on "
                f"{LOOPBACK} only; Dask's dashboard is at http://{LOOPBACK}:{DASHBOARD_PORT} on the server "
                "while a job runs (an SSH tunnel reaches it)")
    over = "over TLS" if scheduler_host(address)[0] == "tls" else "on this machine, plain tcp"
    return (f"a Dask scheduler {over}; the ingest job connects when it starts and shows its workers and "
            "dashboard here, or why it could not connect")
