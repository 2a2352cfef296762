"""The learning curve of a run, drawn from its ``metrics.csv``."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

__all__ = ["plot_curve"]


def plot_curve(directory: Path) -> Path | None:
    """Draw ``curve.png`` (episode return against environment steps) from ``metrics.csv``."""
    path = directory / "metrics.csv"
    if not path.is_file():
        return None
    with path.open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["episode_return"] != ""]
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [int(r["env_steps"]) for r in rows]
    returns = [float(r["episode_return"]) for r in rows]
    config = json.loads((directory / "config.json").read_text())
    title = f"{config.get('algo', '').upper()} on {config['env']}"
    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=100)
    ax.plot(steps, returns)
    ax.set_xlabel("environment steps per seed")
    ax.set_ylabel("episode return (mean over seeds)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    out = directory / "curve.png"
    tmp = directory / f".curve.tmp-{os.getpid()}.png"
    fig.savefig(tmp)
    plt.close(fig)
    os.replace(tmp, out)
    return out
