"""Watching a job's whole process tree from a benchmark."""

from __future__ import annotations

import subprocess
import time

import psutil


def watch_tree(proc: subprocess.Popen) -> tuple[int, float]:
    """Peak RSS (VmHWM) of any process in the tree and the CPU seconds of all of them, polled until
    it exits.

    Polled rather than taken from rusage: pool workers are children of the forkserver, not of the job.
    """
    peaks: dict[int, int] = {}
    cpu: dict[int, float] = {}
    root = psutil.Process(proc.pid)
    while proc.poll() is None:
        try:
            tree = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            break
        for p in tree:
            try:
                times = p.cpu_times()
                cpu[p.pid] = times.user + times.system
                with open(f"/proc/{p.pid}/status") as status:
                    for line in status:
                        if line.startswith("VmHWM:"):
                            peaks[p.pid] = max(peaks.get(p.pid, 0), int(line.split()[1]) * 1024)
            except (psutil.Error, OSError):
                pass
        time.sleep(0.02)
    return max(peaks.values(), default=0), sum(cpu.values())
