"""`streamlit run streamlit_app.py` as a real server in a subprocess, for the tests that need one."""

import contextlib
import os
import pathlib
import socket
import subprocess
import sys
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent


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
