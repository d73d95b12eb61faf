"""`streamlit run streamlit_app.py` as a real server in a subprocess, and Debian's Chromium driven by Playwright
against it, for the tests that need them."""

import contextlib
import os
import pathlib
import socket
import subprocess
import sys
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
IDLE = "[data-test-script-state='notRunning']"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def streamlit_server(log_path: pathlib.Path, env: dict, *options: str, port: int | None = None):
    """The dashboard served from the repository with its own .streamlit/config.toml; yields (process, port).

    `options` are more `streamlit run` flags (e.g. `--secrets.files PATH`)."""
    port = port or free_port()
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "streamlit_app.py", "--server.headless", "true",
             "--server.port", str(port), "--server.fileWatcherType", "none", *options],
            cwd=ROOT, env={**os.environ, **env}, stdout=log, stderr=subprocess.STDOUT,
        )
        try:
            wait_until_up(f"http://127.0.0.1:{port}", process)
            yield process, port
        finally:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()


def wait_until_up(url: str, process: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError("streamlit exited before it served")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise TimeoutError("streamlit did not come up")


@contextlib.contextmanager
def chromium():
    """Debian's Chromium (Playwright's own browser download does not work here)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def settle(page) -> None:
    """Wait until the script run is over, and stays over (a callback or a rerun may follow)."""
    for _ in range(2):
        page.wait_for_selector(IDLE)
        page.wait_for_timeout(400)
    page.wait_for_selector(IDLE)


def no_exception(page) -> None:
    exceptions = page.locator("[data-testid='stException']")
    assert exceptions.count() == 0, exceptions.first.inner_text()


def go(page, url: str, path: str) -> None:
    """Open one of the dashboard's pages and wait for its script run; no exception on it."""
    page.goto(f"{url}/{path}")
    settle(page)
    no_exception(page)
