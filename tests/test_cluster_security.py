"""The Dask cluster is the server's to choose: no page dials one, plain tcp stays on loopback, remote is TLS.

A Dask client unpickles what its scheduler sends. The hostile scheduler here is Dask's own listener
answering every message with a pickle that creates a marker file: connecting to it is running its code.
"""

import asyncio
import contextlib
import pathlib
import socket
import threading
import time

import pytest

pytest.importorskip("distributed")

import distributed  # noqa: E402
from click.testing import CliRunner  # noqa: E402
from distributed.comm import listen  # noqa: E402
from distributed.protocol.serialize import ToPickle  # noqa: E402

from apptest_support import job_finished, page, ran, texts, wait_for  # noqa: E402
from curation import Manifest  # noqa: E402
from curation.cli import cli  # noqa: E402
from curation.runs import cluster_config  # noqa: E402
from curation.runs.cluster import Cluster, ClusterError, connect  # noqa: E402
from curation.sources import paths  # noqa: E402

TLS_ENVS = cluster_config.TLS_ENVS


class Touch:
    """Unpickling this creates a file: what a hostile scheduler's answer does to its client."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return pathlib.Path.touch, (pathlib.Path(self.path),)


class HostileScheduler:
    """A Dask listener on a loopback port that counts the connections made to it and answers every
    message with a pickled `Touch(marker)`."""

    def __init__(self, marker: pathlib.Path):
        self.marker = marker
        self.connections = 0
        self._ready = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._serve()), daemon=True)
        self._thread.start()
        assert self._ready.wait(30)

    async def _serve(self):
        async def answer(comm):
            self.connections += 1
            try:
                while True:
                    await comm.read()
                    await comm.write({"status": "OK", "reply": ToPickle(Touch(self.marker))})
            except Exception:  # the client went away
                pass

        listener = listen("tcp://127.0.0.1:0", answer)
        await listener.start()
        self.address = listener.contact_address
        self._stop = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        self._ready.set()
        await self._stop.wait()
        listener.stop()

    def close(self):
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)


@pytest.fixture
def hostile(tmp_path):
    scheduler = HostileScheduler(tmp_path / "marker")
    yield scheduler
    scheduler.close()


@pytest.fixture
def silent_port():
    """A port that accepts connections and never says a word (not a Dask scheduler)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    accepted = []

    def accept():
        with contextlib.suppress(OSError):  # closed at the end of the test
            while True:
                accepted.append(server.accept()[0])

    threading.Thread(target=accept, daemon=True).start()
    yield f"tcp://127.0.0.1:{server.getsockname()[1]}"
    server.close()


@pytest.fixture
def app(tmp_path, monkeypatch, archive):
    """The Ingest page's settings: a manifest with one source; no cluster or TLS in the environment."""
    db = tmp_path / "data" / "manifest.sqlite"
    monkeypatch.setenv("CURATION_DB", str(db))
    monkeypatch.setenv(paths.ROOTS_ENV, str(archive.parent))
    for name in (cluster_config.ADDRESS_ENV, *TLS_ENVS):
        monkeypatch.delenv(name, raising=False)
    with Manifest(db) as manifest:
        paths.add_source(manifest, archive)
    return db


def no_browser_input_for_server_settings(at):
    assert not [t for t in at.text_input if "cluster" in t.label.lower()]
    assert not [n for n in at.number_input if n.label.startswith("Time limit per page")]


def test_the_hostile_scheduler_runs_code_in_a_client_that_connects(hostile):
    """The premise of this file: connecting is enough (a plain Dask client, as the old page made)."""
    with pytest.raises(Exception):
        distributed.Client(hostile.address, timeout="5s")
    assert hostile.connections and hostile.marker.exists()


def test_rendering_the_ingest_page_never_connects_to_the_configured_scheduler(app, hostile, monkeypatch):
    monkeypatch.setenv(cluster_config.ADDRESS_ENV, hostile.address)  # loopback tcp: the server may be told so
    at = ran(page("pages/ingest.py"))
    ran(at)
    time.sleep(0.5)
    assert hostile.connections == 0 and not hostile.marker.exists()
    assert hostile.address in texts(at) and "administrator" in texts(at)
    no_browser_input_for_server_settings(at)


def test_an_address_the_old_page_saved_in_the_manifest_is_neither_dialled_nor_used(app, hostile):
    with Manifest(app) as manifest:
        manifest.set_setting("cluster", hostile.address)  # what a visitor's input used to leave behind
    at = ran(page("pages/ingest.py"))
    assert hostile.connections == 0 and not hostile.marker.exists()
    assert "none, worker processes on this server" in texts(at)
    next(b for b in at.button if b.label == "Start").click()
    ran(at)
    job = wait_for(job_finished(app, "ingest"))
    assert job["status"] == "done", job["message"]
    assert hostile.connections == 0 and not hostile.marker.exists()


def test_the_time_limit_is_shown_read_only_and_the_command_line_changes_it(app):
    at = ran(page("pages/ingest.py"))
    no_browser_input_for_server_settings(at)
    assert "Time limit per page:** 60 s" in texts(at)
    limit = next(m for m in at.markdown if "Time limit per page" in m.value)
    assert "settings --page-timeout" in limit.proto.help  # how the administrator changes it
    result = CliRunner().invoke(cli, ["settings", "--db", str(app), "--page-timeout", "15"])
    assert result.exit_code == 0, result.output
    assert "Time limit per page:** 15 s" in texts(ran(page("pages/ingest.py")))


@pytest.mark.parametrize("address", [
    "tcp://10.1.2.3:8786", "scheduler.example.org:8786", "tcp://[2001:db8::1]:8786", "tcp://0.0.0.0:8786",
])
def test_a_plain_tcp_scheduler_on_another_machine_is_refused_before_any_connection(address, monkeypatch):
    def dial(*args, **kwargs):
        raise AssertionError(f"connected to {args}")

    monkeypatch.setattr(distributed, "Client", dial)
    monkeypatch.setattr(socket, "create_connection", dial)
    with pytest.raises(ClusterError, match="plain tcp:// scheduler on another machine, refused.*Use TLS"):
        Cluster(address)


def test_the_command_line_refuses_it_and_the_ingest_page_then_says_why(app, archive, monkeypatch):
    monkeypatch.setenv(cluster_config.ADDRESS_ENV, "tcp://10.1.2.3:8786")
    result = CliRunner().invoke(cli, ["ingest", str(archive), "--db", str(app), "--quiet"])
    assert result.exit_code == 1 and "Use TLS" in result.output and "Traceback" not in result.output
    with Manifest(app) as manifest:
        job = manifest.latest_job("ingest")
        assert job["status"] == "failed" and "tls://10.1.2.3:PORT" in job["message"]
        assert manifest.summary()["pages"] == 0
    at = ran(page("pages/ingest.py"))
    assert "Ingest failed" in at.error[0].value and "Use TLS" in at.error[0].value
    assert "refused" in texts(at)  # the setting itself is marked as refused too


def test_a_loopback_tcp_scheduler_is_the_servers_choice(hostile):
    """Plain tcp on loopback is allowed: only the server's configuration can name it (the tests above)."""
    cluster_config.check_address(hostile.address)
    cluster_config.check_address("tcp://localhost:8786")


def test_a_tls_address_needs_the_tls_files_before_any_connection(monkeypatch, tmp_path):
    for name in TLS_ENVS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(distributed, "Client", lambda *a, **k: pytest.fail("connected"))
    with pytest.raises(ClusterError, match=cluster_config.TLS_CA_ENV):
        Cluster("tls://127.0.0.1:8786")
    for name in TLS_ENVS:
        monkeypatch.setenv(name, str(tmp_path / "missing.pem"))
    with pytest.raises(ClusterError, match="not a file this server can read"):
        Cluster("tls://scheduler.example.org:8786")


def test_a_port_that_accepts_and_never_answers_is_given_up_in_time(silent_port):
    started = time.monotonic()
    with pytest.raises(ClusterError, match="did not answer within 1 s"):
        connect(silent_port, timeout=1)
    assert time.monotonic() - started < 10


# -- TLS ---------------------------------------------------------------------------------------


def write_tls_files(folder: pathlib.Path, security) -> dict[str, str]:
    """The PEM texts of a `Security.temporary()` as the files the server's environment names."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {}
    for name, text in zip(TLS_ENVS, (security.tls_ca_file, security.tls_client_cert, security.tls_client_key)):
        path = folder / (name.lower() + ".pem")
        path.write_text(text)
        files[name] = str(path)
    return files


@pytest.fixture(scope="module")
def tls_scheduler():
    """A scheduler and one in-process worker speaking only TLS, with certificates of their own CA."""
    pytest.importorskip("cryptography")  # Security.temporary() makes the certificates with it
    security = distributed.Security.temporary()
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tls://",
                                  host="127.0.0.1", security=security, dashboard_address=None) as local:
        yield local, security


def test_a_tls_scheduler_is_used_with_the_configured_certificates(tls_scheduler, tmp_path, monkeypatch):
    local, security = tls_scheduler
    for name, path in write_tls_files(tmp_path / "tls", security).items():
        monkeypatch.setenv(name, path)
    with Cluster(local.scheduler_address) as cluster:
        assert cluster.address.startswith("tls://127.0.0.1:")
        assert cluster.workers() == 1
        assert cluster.client.submit(abs, -7, pure=False).result(timeout=30) == 7


def test_a_tls_scheduler_whose_certificate_another_ca_signed_is_refused(tls_scheduler, tmp_path, monkeypatch):
    local, _ = tls_scheduler
    for name, path in write_tls_files(tmp_path / "other", distributed.Security.temporary()).items():
        monkeypatch.setenv(name, path)
    with pytest.raises(ClusterError, match="cannot reach|did not answer"):
        connect(local.scheduler_address, timeout=3)
