"""What ``rollax info`` prints: versions, the backend and its devices, the flags rollax set."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import sys
from typing import Any

from rollax._xla_cpu import flags_set, scheduler_deadlocks

__all__ = ["format_info", "system_info"]

# Installed distributions worth naming when present: JAX's accelerator plugins and the
# libraries rollax builds on.
_DISTRIBUTIONS = (
    "jax",
    "jaxlib",
    "jax-cuda12-plugin",
    "jax-cuda13-plugin",
    "libtpu",
    "flax",
    "optax",
    "orbax-checkpoint",
    "numpy",
)
# Environment variables that change how JAX uses the machine.
_ENV_VARS = (
    "XLA_FLAGS",
    "JAX_PLATFORMS",
    "XLA_PYTHON_CLIENT_PREALLOCATE",
    "XLA_PYTHON_CLIENT_MEM_FRACTION",
    "XLA_PYTHON_CLIENT_ALLOCATOR",
    "CUDA_VISIBLE_DEVICES",
)


def _version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def system_info() -> dict[str, Any]:
    """The installation and the machine as JAX sees them, as plain data.

    Starts JAX's backend (it lists the devices), so the flags rollax sets must be set before.

    Returns:
        A dict with ``rollax``, ``python``, ``platform``, ``versions`` (installed
        distributions), ``backend``, ``devices`` (one string per device), ``process_count``,
        ``environment`` (the variables set), ``xla_flags_set_by_rollax``,
        ``cpu_scheduler_workaround_needed`` and ``compilation_cache_dir``.
    """
    import jax

    from rollax import __version__
    from rollax.runs import compilation_cache_dir

    versions = {name: _version(name) for name in _DISTRIBUTIONS}
    return {
        "rollax": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "versions": {name: v for name, v in versions.items() if v is not None},
        "backend": jax.default_backend(),
        "devices": [f"{d.platform}:{d.id} {d.device_kind}" for d in jax.devices()],
        "process_count": jax.process_count(),
        "environment": {k: os.environ[k] for k in _ENV_VARS if k in os.environ},
        "xla_flags_set_by_rollax": flags_set(),
        "cpu_scheduler_workaround_needed": scheduler_deadlocks(),
        "compilation_cache_dir": str(compilation_cache_dir()),
    }


def format_info(info: dict[str, Any]) -> str:
    """``info`` (from :func:`system_info`) as aligned ``name: value`` lines."""
    lines = [f"rollax {info['rollax']} on Python {info['python']} ({info['platform']})"]
    lines += [f"  {name}: {version}" for name, version in info["versions"].items()]
    count = len(info["devices"])
    lines.append(f"backend: {info['backend']} ({count} device{'s' * (count != 1)})")
    lines += [f"  {device}" for device in info["devices"]]
    lines.append(f"processes: {info['process_count']}")
    for name, value in info["environment"].items():
        lines.append(f"{name}={value}")
    flags = info["xla_flags_set_by_rollax"]
    lines.append(f"XLA flags rollax set: {' '.join(flags) if flags else 'none'}")
    lines.append(f"compilation cache (rollax train): {info['compilation_cache_dir']}")
    return "\n".join(lines)
