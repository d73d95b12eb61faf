"""Ingest on a Dask cluster: the same manifest as the local pool, and the same survival of crashes."""

import os
import signal
import sys
import urllib.parse

import psutil
import pytest

pytest.importorskip("distributed")

from click.testing import CliRunner  # noqa: E402

from curation import Manifest, ingest  # noqa: E402
from curation.cli import cli  # noqa: E402
from curation.runs.cluster import Cluster, ClusterError, ClusterLost, local_workers  # noqa: E402
from curation.runs.scheduler import CRASH_MESSAGE  # noqa: E402

from conftest import small_pdf  # noqa: E402
import crashing  # noqa: E402


@pytest.fixture(scope="module")
def shared_cluster():
    """One LocalCluster of 2 worker processes for the module (starting one takes seconds)."""
    with Cluster("local:2", dashboard_port=0) as started:
        yield started


@pytest.fixture
def cluster(shared_cluster):
    """The module's cluster with both workers up: a test that killed one leaves it restarting."""
    shared_cluster.rejoin()
    assert len(shared_cluster.client.nthreads()) == 2
    return shared_cluster


@pytest.fixture
def bad_archive(tmp_path):
    folder = tmp_path / "archive"
    for n, pages in enumerate((4, 5, 6)):
        small_pdf(folder / f"issue-{n}.pdf", pages=pages, seed=n)
    (folder / "renamed-photo.pdf").write_bytes(b"\xff\xd8\xff\xe0 not a pdf")
    (folder / "empty.pdf").write_bytes(b"")
    return folder


def rows(manifest):
    return {(r["doc"].rsplit("/", 1)[1], r["page"]): (r["status"], r["sigma"]) for r in manifest.pages()}


def statuses(manifest):
    return {d["path"].rsplit("/", 1)[1]: (d["status"], d["error"]) for d in manifest.documents()}


def test_the_cluster_writes_the_manifest_the_local_pool_writes(cluster, bad_archive, tmp_path):
    with Manifest(tmp_path / "pool.sqlite") as pool, Manifest(tmp_path / "dask.sqlite") as dask:
        ingest(pool, [bad_archive], workers=2)
        report = ingest(dask, [bad_archive], cluster=cluster)
        assert report.pages_scored == 15 and report.crashes == 0
        expected, got = rows(pool), rows(dask)
        assert got.keys() == expected.keys() and len(got) == 15
        for key, (status, sigma) in expected.items():
            assert got[key][0] == status and got[key][1] == pytest.approx(sigma, abs=1e-9)
        assert statuses(dask) == statuses(pool)
        assert statuses(dask)["renamed-photo.pdf"][0] == "not-pdf"
        assert ingest(dask, [bad_archive], cluster=cluster).pages_scored == 0  # incremental, as ever


def test_workers_hash_the_files_and_a_renamed_file_is_not_scored_twice_a_changed_one_is(
        cluster, manifest, bad_archive, monkeypatch):
    def coordinator_hash(*args):
        raise AssertionError("the coordinator read a file to hash it")

    monkeypatch.setattr(sys.modules["curation.runs.ingest"], "file_sha256", coordinator_hash)  # the workers' copy is their own
    assert ingest(manifest, [bad_archive], cluster=cluster).pages_scored == 15
    (bad_archive / "issue-1.pdf").rename(bad_archive / "renamed.pdf")
    report = ingest(manifest, [bad_archive], cluster=cluster)
    assert (report.pages_scored, report.new_documents) == (0, 0)
    small_pdf(bad_archive / "issue-2.pdf", pages=3, seed=42)  # new content at a known path
    report = ingest(manifest, [bad_archive], cluster=cluster)
    assert (report.pages_scored, report.new_documents) == (3, 1)
    assert [d["status"] for d in manifest.documents() if d["path"].endswith("issue-2.pdf")].count("replaced") == 1


def test_a_page_that_crashes_its_worker_is_marked_failed_alone(cluster, manifest, tmp_path):
    folder = tmp_path / "archive"
    small_pdf(folder / "a.pdf", pages=8, seed=4)
    small_pdf(folder / "b.pdf", pages=3, seed=5)
    report = ingest(manifest, [folder], cluster=cluster, pages_per_task=4, task_fn=crashing.run_task_crashing_on_page_5)
    pages = {(r["doc"].rsplit("/", 1)[1], r["page"]): r for r in manifest.pages()}
    assert [k for k, r in pages.items() if r["status"] == "failed"] == [("a.pdf", 5)]
    assert pages[("a.pdf", 5)]["error"] == CRASH_MESSAGE
    assert len(pages) == 11 and report.pages_scored == 10 and report.crashes >= 1
    assert {name: status for name, (status, _) in statuses(manifest).items()} == {"a.pdf": "partial", "b.pdf": "ok"}


def test_a_page_past_the_time_limit_frees_its_worker_and_fails_alone(cluster, manifest, tmp_path):
    folder = tmp_path / "archive"
    small_pdf(folder / "a.pdf", pages=3, seed=1)
    small_pdf(folder / "b.pdf", pages=6, seed=2)
    report = ingest(manifest, [folder], cluster=cluster, pages_per_task=6, page_timeout=30.0,
                    task_fn=crashing.run_task_hanging_on_page_3)
    pages = {(r["doc"].rsplit("/", 1)[1], r["page"]): r for r in manifest.pages()}
    assert [key for key, row in pages.items() if row["status"] == "failed"] == [("b.pdf", 3)]
    assert "took longer than 30 s" in pages[("b.pdf", 3)]["error"]
    assert len(pages) == 9 and report.pages_scored == 8 and report.timeouts >= 1
    cluster.rejoin()
    for worker in cluster.client.nthreads():  # the hung workers were replaced: none has its thread stuck
        assert cluster.client.submit(abs, -1, workers=[worker], pure=False).result(timeout=20) == 1


def test_a_worker_killed_mid_run_loses_and_duplicates_nothing(cluster, manifest, tmp_path):
    folder = tmp_path / "archive"
    for n in range(3):
        small_pdf(folder / f"issue-{n}.pdf", pages=8, seed=10 + n)
    pids = list(cluster.client.run(os.getpid).values())
    killed = []

    def kill_one_worker(done, total):
        if done and not killed:
            os.kill(pids[0], signal.SIGKILL)
            killed.append(done)

    report = ingest(manifest, [folder], cluster=cluster, pages_per_task=2, on_progress=kill_one_worker)
    assert killed and killed[0] < 24
    keys = manifest.conn.execute("SELECT doc_id, page FROM pages").fetchall()
    assert len(keys) == len(set(keys)) == 24
    assert report.pages_scored == 24 and report.pages_failed == 0
    assert {status for status, _ in statuses(manifest).values()} == {"ok"}
    cluster.rejoin()
    assert len(cluster.client.nthreads()) == 2  # the nanny has replaced it


def test_a_local_worker_its_nanny_could_not_restart_is_replaced(cluster):
    lost = next(iter(cluster.local.workers))
    cluster.local.sync(cluster.local.workers[lost].close)  # as a nanny whose restart failed
    assert len(cluster.client.nthreads()) == 1
    cluster.rejoin()
    assert len(cluster.client.nthreads()) == 2


def test_a_scheduler_that_goes_away_ends_the_run_and_the_manifest_resumes(manifest, tmp_path):
    folder = tmp_path / "archive"
    small_pdf(folder / "a.pdf", pages=12, seed=6)
    lost = Cluster("local:1", dashboard_port=0)

    def close_the_cluster(done, total):
        if done and lost.local is not None:
            lost.local.close()
            lost.local = None

    with lost, pytest.raises(ClusterLost, match="lost the Dask scheduler"):
        ingest(manifest, [folder], cluster=lost, pages_per_task=2, on_progress=close_the_cluster)
    saved = manifest.conn.execute("SELECT COUNT(*) FROM pages").fetchone()[0]
    assert 0 < saved < 12 and manifest.latest_job("ingest")["status"] == "failed"
    assert ingest(manifest, [folder], workers=1).pages_scored == 12 - saved


def test_an_archive_given_as_a_url_is_listed_here_and_read_by_the_workers(cluster, bad_archive, tmp_path):
    with Manifest(tmp_path / "path.sqlite") as by_path, Manifest(tmp_path / "url.sqlite") as by_url:
        ingest(by_path, [bad_archive], cluster=cluster)
        report = ingest(by_url, [bad_archive.as_uri()], cluster=cluster)
        assert report.pages_scored == 15
        assert rows(by_url) == rows(by_path) and statuses(by_url) == statuses(by_path)
        assert all(d["path"].startswith("file:///") for d in by_url.documents())
        assert ingest(by_url, [bad_archive.as_uri()], cluster=cluster).pages_scored == 0


def test_a_path_the_workers_cannot_see_is_refused_before_any_work(cluster, tmp_path):
    with pytest.raises(ClusterError, match="2 of 2 Dask workers cannot see .*nowhere.pdf"):
        cluster.check_paths([tmp_path / "nowhere.pdf"])


def test_the_command_line_runs_on_a_local_cluster_and_explains_a_bad_address(bad_archive, tmp_path):
    runner = CliRunner()
    db = str(tmp_path / "m.sqlite")
    result = runner.invoke(cli, ["ingest", str(bad_archive), "--db", db, "--quiet"],
                           env={"CURATION_CLUSTER": "local:nine"})
    assert result.exit_code == 1 and "local:N" in result.output and "Traceback" not in result.output
    assert local_workers("tcp://host:8786") is None and local_workers("local:3") == 3


def test_a_local_cluster_listens_on_loopback_only_dashboard_included_and_speaks_tls(cluster):
    assert cluster.local.scheduler_address.startswith("tls://127.0.0.1:")
    assert all(worker.startswith("tls://127.0.0.1:") for worker in cluster.client.nthreads())
    dashboard = urllib.parse.urlsplit(cluster.dashboard_link)
    assert dashboard.hostname == "127.0.0.1"
    here = psutil.Process()
    listening = {(c.laddr.ip, c.laddr.port) for process in (here, *here.children(recursive=True))
                 for c in process.net_connections("inet") if c.status == psutil.CONN_LISTEN}
    assert ("127.0.0.1", dashboard.port) in listening
    assert {ip for ip, _ in listening} == {"127.0.0.1"}


def test_the_job_says_which_workers_and_dashboard_it_runs_on_while_it_runs(cluster, manifest, bad_archive):
    said = []
    ingest(manifest, [bad_archive], cluster=cluster,
           on_progress=lambda done, total: said.append(manifest.running_job("ingest")["message"]))
    assert said and "2 workers, 2 threads" in said[0] and "dashboard http://127.0.0.1:" in said[0]
