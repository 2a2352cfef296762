"""The extras tests name, and the modules each needs: one table for ``@pytest.mark.extra``
(tests/conftest.py) and the docs' ``# requires:`` markers (tests/test_docs.py)."""

from __future__ import annotations

import importlib.util

# What `@pytest.mark.extra(NAME)` and a docs page's `# requires: rollax[NAME]` stand for: the
# top-level modules that must be importable. The names are pyproject.toml's extras, and for
# the `bench` extra, each of its packages.
EXTRAS: dict[str, tuple[str, ...]] = {
    "gymnasium": ("gymnasium",),
    "atari": ("ale_py", "gymnasium"),
    "envpool": ("envpool", "gymnasium"),
    "mujoco": ("mujoco", "gymnasium"),
    "torch": ("torch",),
    "torchrl": ("torch", "torchrl", "tensordict"),
    "sb3": ("stable_baselines3", "torch", "gymnasium"),
    "sbx": ("sbx", "stable_baselines3", "torch", "gymnasium"),
    "gymnax": ("gymnax",),
    "brax": ("brax",),
    "craftax": ("craftax",),
    "jumanji": ("jumanji",),
    "xminigrid": ("xminigrid",),
    "playground": ("mujoco_playground",),
    "video": ("imageio_ffmpeg",),
    "docs": ("mkdocs", "material", "mkdocstrings"),
    "rejax": ("rejax",),
    "flashbax": ("flashbax",),
    "rliable": ("rliable",),
    "pygame": ("pygame",),
    "wandb": ("wandb",),
    "mlflow": ("mlflow", "sqlalchemy", "alembic"),
}


def absent_modules(name: str) -> list[str]:
    """The modules of extra ``name`` (a key of :data:`EXTRAS`) that cannot be imported here."""
    return [m for m in EXTRAS[name] if importlib.util.find_spec(m) is None]
