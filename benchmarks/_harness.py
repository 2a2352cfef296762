"""What every benchmark script shares around its measurements: the command line, the device
banner, the final JSON line and the statistics of repeated figures.

A script builds its options with :class:`Parser` (the flags several scripts share, each with
the script's own default), prints :func:`banner` first, and ends with :func:`emit` (one JSON
object with every figure: the last line printed). Medians, ratios and interval estimates come
from :func:`median_of`, :func:`ratio` and :func:`interval_estimates`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
from pathlib import Path
from typing import Any

import numpy as np

# ---------------------------------------------------------------------------- command line


class Parser(argparse.ArgumentParser):
    """A script's options, described by the first line of its docstring. The shared flags
    are added by the methods named after them (each returns the parser, so they chain); the
    script's own flags with ``add_argument``."""

    def __init__(self, doc: str | None) -> None:
        super().__init__(description=(doc or "").splitlines()[0])

    def repeats(self, default: int, help: str | None = None) -> Parser:
        """``--repeats N``: timed repeats (the figures are their medians)."""
        self.add_argument("--repeats", type=int, default=default, help=help)
        return self

    def sizes(self, *default: int, help: str | None = None) -> Parser:
        """``--sizes N ...``: the batch sizes (numbers of environments) measured."""
        self.add_argument("--sizes", type=int, nargs="+", default=list(default), help=help)
        return self

    def steps(self, default: int | None, help: str | None = None) -> Parser:
        """``--steps N``: steps per timed run (or a budget, as ``help`` says)."""
        self.add_argument("--steps", type=int, default=default, help=help)
        return self

    def seeds(self, default: int, help: str | None = None) -> Parser:
        """``--seeds N``: seeds (independent runs) per library."""
        self.add_argument("--seeds", type=int, default=default, help=help)
        return self

    def episodes(self, default: int, help: str = "evaluation episodes") -> Parser:
        """``--episodes N``: episodes of each evaluation."""
        self.add_argument("--episodes", type=int, default=default, help=help)
        return self

    def reps(self, default: int) -> Parser:
        """``--reps N``: bootstrap resamples of each interval estimate."""
        self.add_argument("--reps", type=int, default=default, help="bootstrap resamples")
        return self

    def tiny(self, help: str | None = None) -> Parser:
        """``--tiny``: toy sizes, a smoke test."""
        self.add_argument("--tiny", action="store_true", help=help)
        return self

    def choice(self, flag: str, choices: Any, help: str | None = None) -> Parser:
        """``flag NAME ...``: some of ``choices`` (default: all of them, in their order)."""
        self.add_argument(flag, nargs="+", choices=list(choices), default=list(choices), help=help)
        return self


# ---------------------------------------------------------------------------- banner


def cpu_name() -> str:
    """The machine's CPU model and core count (the cores this process may run on)."""
    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        names = [ln.split(":", 1)[1].strip() for ln in cpuinfo.read_text().splitlines()
                 if ln.startswith("model name")]  # fmt: skip
        model = names[0] if names else model
    affinity = getattr(os, "sched_getaffinity", None)
    cores = len(affinity(0)) if affinity else os.cpu_count()
    return f"{model}, {cores} cores"


def device_name() -> str:
    """What runs the programs: the accelerator's kind, or the CPU's model and cores."""
    import jax

    device = jax.devices()[0]
    return cpu_name() if device.platform == "cpu" else device.device_kind


def banner(*notes: str) -> None:
    """The first line a script prints: JAX's version, the backend and the device, then
    ``notes`` (what the reader must know of the peers' setup), separated by ``; ``."""
    import jax

    line = f"jax {jax.__version__} on {jax.default_backend()} ({device_name()})"
    print("; ".join((line, *notes)), flush=True)


def jax_info() -> dict[str, str]:
    """The ``jax`` and ``backend`` entries of a script's JSON line."""
    import jax

    return {"jax": jax.__version__, "backend": jax.default_backend()}


# ---------------------------------------------------------------------------- JSON line


def emit(report: dict[str, Any]) -> None:
    """Print ``report`` as one JSON object on one line: a script's last line, read by the
    tests and by ``--from``-style restatements."""
    print(json.dumps(report), flush=True)


# ---------------------------------------------------------------------------- statistics


def median_of(runs: list[dict], key: str) -> float | None:
    """Median of ``run[key]`` over the runs where it is not None (None if there are none)."""
    values = [r[key] for r in runs if r[key] is not None]
    return statistics.median(values) if values else None


def ratio(mine: float | None, peer: float | None) -> float | None:
    """``mine / peer`` (rollax over its peer), or None where either figure is missing or
    zero (a threshold never reached)."""
    return mine / peer if mine and peer else None


def interval_estimates(scores: dict[str, Any], statistic: Any, reps: int) -> dict[str, list]:
    """rliable's point estimate and 95% stratified bootstrap percentile interval of
    ``statistic`` for each entry of ``scores``, as ``[estimate, low, high]``. An entry is
    float ``(seeds, 1)`` (the runs of one task), or a list of two for a statistic of two
    samples, resampled independently (the seeds of two libraries are not paired). rliable
    draws its resamples from numpy's global generator: it is seeded with 0 before each call,
    so the same returns give the same intervals."""
    from rliable import library as rly

    np.random.seed(0)  # noqa: NPY002
    point, interval = rly.get_interval_estimates(
        scores, lambda *s: np.array([statistic(*s)]), reps=reps
    )
    return {k: [float(point[k][0]), *map(float, interval[k][:, 0])] for k in scores}


def verdict(improvement: list[float], difference: list[float]) -> str:
    """``"above"`` where the interval of the probability of improvement lies above 0.5 or
    that of the IQM difference (rollax - peer) above 0, and neither interval lies below;
    ``"below"`` the other way round; ``"tied"`` otherwise (each ``[estimate, low, high]``)."""
    above = improvement[1] > 0.5 or difference[1] > 0
    below = improvement[2] < 0.5 or difference[2] < 0
    return "above" if above and not below else "below" if below and not above else "tied"
