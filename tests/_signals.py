"""Stopping a training subprocess with a signal once it has logged a few rows."""

import signal
import subprocess
import time
from pathlib import Path


def signal_after_rows(
    proc: subprocess.Popen, metrics: Path, rows: int = 3, signum: int = signal.SIGTERM
) -> str:
    """Send ``signum`` once ``metrics`` (a run's metrics.csv) holds ``rows`` lines; its stderr.

    Asserts that the run was still training then, and that it exited with 128 + ``signum``.
    """
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if metrics.is_file() and len(metrics.read_text().splitlines()) >= rows:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "training ended before it could be interrupted"
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signum, stderr
    return stderr
