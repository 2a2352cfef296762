"""A run in memory: its :class:`RunConfig`, the :class:`Run` itself, and its evaluation.

A :class:`Run` is what is trained or inspected: its directory, algorithm, agent, state and
checkpoints. The entry points that make, load and resume runs (``train``, ``resume``,
``load_run``) build one; the training loop takes it from here, so neither imports the other
back.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
from pathlib import Path
from typing import Any

import numpy as np

from rollax.checkpoints import Checkpointer
from rollax.runs._keys import run_keys
from rollax.runs._pbt import PBTConfig
from rollax.runs._registry import Algorithm
from rollax.runs._run_dir import RunDirectory
from rollax.training import Agent, config_to_json, point_labels

__all__ = ["Run", "RunConfig", "evaluate_state", "parse_assignments"]


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """How a training run is carried out (what it learns is the algorithm's config)."""

    env: str = "CartPole-v1"
    """Environment: a registered id (rollax envs lists them), or your own by import path,
    package.module:EnvClass or package.module/Env-v0 (the module registers Env-v0)."""
    env_params: tuple[str, ...] = ()
    """NAME=VALUE values of the environment's params, e.g. max_episode_steps=80 (data in the
    training state: checkpointed, and used again by resume and eval)."""
    env_options: tuple[str, ...] = ()
    """NAME=VALUE options of the environment's constructor (rollax.make's), e.g.
    view_size=3; applied again by resume and eval."""
    seed: int = 0
    """Seed of the whole run: parameters, environments, exploration and minibatches."""
    run_dir: str = ""
    """Directory of the run; empty: runs/<env>-<algorithm>-<date>-<time>."""
    checkpoint_every: int = 0
    """Environment steps per seed between checkpoints, rounded up to whole logging intervals
    (log_every; the run says so when it rounds); 0: none by steps (see checkpoint_minutes).
    One is always written at the end and on SIGTERM or SIGINT."""
    checkpoint_minutes: float = 5.0
    """Minutes of training between checkpoints, checked after each logging interval (with
    checkpoint_every, whichever comes first); a kill loses at most about this much. 0: none
    by time. curve.png is redrawn with a checkpoint at most once a minute, and at the end."""
    keep_checkpoints: int = 3
    """How many of the newest checkpoints to keep."""
    log_every: int = 0
    """Environment steps per seed between rows of metrics.csv, rounded up to whole
    iterations (the run says so when it rounds); 0: about 100 rows over the budget."""
    eval_episodes: int = 32
    """Episodes per seed evaluated with the final policy (0: no final evaluation)."""
    compilation_cache: bool = True
    """Keep compiled programs in ~/.cache/rollax/jax (or $ROLLAX_CACHE_DIR) so that the next
    run with the same shapes starts without compiling."""
    progress: bool = True
    """Show a progress bar (steps, steps/s, recent return, time left)."""
    wandb: str = ""
    """Weights & Biases project to log the run to as well (pip install 'rollax[wandb]');
    empty: none. Resume continues the same W&B run; WANDB_MODE=offline keeps it in the run
    directory's wandb/ for `wandb sync`."""
    mlflow: str = ""
    """MLflow tracking URI to log the run to as well, e.g. sqlite:///mlflow.db or
    http://host:5000 (pip install 'rollax[mlflow]'); empty: none. The experiment is
    $MLFLOW_EXPERIMENT_NAME, or rollax. Resume continues the same MLflow run."""
    pbt_interval: int = 0
    """Population-based training: environment steps per member between two steps of
    exploit and explore, checked after each logging interval; 0: none. The members are the
    seeds (times a sweep's grid points); at least 2. History: population.jsonl."""
    pbt_explore: tuple[str, ...] = ()
    """What evolves under PBT, NAME=LOW,HIGH bounds, e.g. learning_rate=1e-5,1e-2: float
    hyperparameters the agent holds as data (those it can sweep)."""
    pbt_fraction: float = 0.25
    """PBT: the bottom fraction of members (by recent mean return) that copy a member drawn
    from the top fraction."""
    pbt_perturb: float = 0.2
    """PBT: a copied value is multiplied by 1 - pbt_perturb or 1 + pbt_perturb."""
    pbt_resample: float = 0.25
    """PBT: the chance that a copied value is drawn anew within its bounds instead."""
    pbt_replay: str = ""
    """A population-based training run's directory whose best member's schedule this run
    follows (its explored hyperparameters set at the steps where that lineage's changed);
    empty: none."""

    def validate(self) -> None:
        """Raise a ``ValueError`` naming the first invalid field and what would be valid."""
        for name in ("seed", "checkpoint_every", "log_every", "eval_episodes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"RunConfig.{name} must be an integer >= 0, got {value!r}.")
        value = self.checkpoint_minutes
        if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
            raise ValueError(
                f"RunConfig.checkpoint_minutes must be a number of minutes >= 0 (0: none by "
                f"time), got {value!r}."
            )
        value = self.keep_checkpoints
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"RunConfig.keep_checkpoints must be >= 1, got {value!r}.")
        parse_assignments(self.env_params, "env_params")
        parse_assignments(self.env_options, "env_options")
        if not isinstance(self.wandb, str):
            raise ValueError(f"RunConfig.wandb must be a W&B project name, got {self.wandb!r}.")
        if not isinstance(self.mlflow, str):
            raise ValueError(f"RunConfig.mlflow must be a tracking URI, got {self.mlflow!r}.")
        PBTConfig.from_run_config(self).check()
        if not isinstance(self.pbt_replay, str):
            raise ValueError(
                f"RunConfig.pbt_replay must be a run directory, got {self.pbt_replay!r}."
            )
        if self.pbt_replay and self.pbt_interval:
            raise ValueError(
                "RunConfig.pbt_replay replays a schedule in a plain run; it cannot be combined "
                f"with pbt_interval={self.pbt_interval} (a population of its own)."
            )
        replayed = RunDirectory(Path(self.pbt_replay))
        if self.pbt_replay and not replayed.holds_population():
            raise ValueError(
                f"RunConfig.pbt_replay {self.pbt_replay!r} holds no {replayed.population.name}: "
                "give the directory of a run trained with --pbt-interval."
            )
        for name, package, extra in (("wandb", "wandb", "wandb"), ("mlflow", "mlflow", "mlflow")):
            if getattr(self, name) and importlib.util.find_spec(package) is None:
                raise ValueError(
                    f"RunConfig.{name}={getattr(self, name)!r} (--{name}) needs the {package} "
                    f"package: pip install 'rollax[{extra}]'."
                )

    @property
    def make_options(self) -> dict[str, Any]:
        """``env_options`` as keyword arguments of :func:`rollax.make`."""
        return parse_assignments(self.env_options, "env_options")


def parse_assignments(pairs: Any, name: str) -> dict[str, Any]:
    """``("a=1", "b=0.5", "c=xy")`` as ``{"a": 1, "b": 0.5, "c": "xy"}``.

    Values are Python literals (numbers, ``True``, tuples...) or else strings.

    Raises:
        ValueError: an entry that is not ``NAME=VALUE``, or a name given twice.
    """
    if isinstance(pairs, str) or not all(isinstance(p, str) for p in pairs):
        raise ValueError(f"RunConfig.{name} must be NAME=VALUE strings, got {pairs!r}.")
    out: dict[str, Any] = {}
    for pair in pairs:
        key, eq, text = pair.partition("=")
        key = key.strip()
        if not eq or not key.isidentifier():
            raise ValueError(
                f"--{name.replace('_', '-')}: {pair!r} is not NAME=VALUE (e.g. "
                f"max_episode_steps=80)."
            )
        if key in out:
            raise ValueError(f"--{name.replace('_', '-')}: {key!r} is given twice.")
        try:
            out[key] = ast.literal_eval(text.strip())
        except (ValueError, SyntaxError):
            out[key] = text.strip()
    return out


@dataclasses.dataclass
class Run:
    """A run being trained or inspected: its directory, algorithm, agent and state.

    Attributes:
        directory: The run's files.
        algorithm: The registered algorithm.
        config: The algorithm's configuration.
        run_config: How the run is carried out.
        agent: The agent built from them.
        state: The training state (restored, or fresh from ``init``).
        checkpoints: The run's checkpoints.
    """

    directory: RunDirectory
    algorithm: Algorithm
    config: Any
    run_config: RunConfig
    agent: Agent
    state: Any
    checkpoints: Checkpointer

    @property
    def env_steps(self) -> int:
        """Environment steps per seed trained so far."""
        return int(self.state.env_steps)

    def config_json(self) -> dict[str, Any]:
        """What ``config.json`` (and each checkpoint) records about the run."""
        return {
            "algo": self.algorithm.name,
            "env": self.run_config.env,
            "config": config_to_json(self.config),
            "run": config_to_json(self.run_config),
        }


def evaluate_state(run: Run, episodes: int) -> dict[str, Any]:
    """Mean and spread of the return with the deterministic and the stochastic policy.

    ``per_seed_mean`` has one entry per member; a sweep adds ``points``: each grid point's
    mean return over its seeds' episodes, per policy.
    """
    key = run_keys(run.run_config.seed).evaluate
    result: dict[str, Any] = {"env_steps": run.env_steps, "episodes_per_seed": episodes}
    labels = point_labels(run.config.sweep)
    points: list[dict[str, Any]] = [{"point": label} for label in labels]
    for name, deterministic in (("deterministic", True), ("stochastic", False)):
        returns = np.asarray(run.agent.evaluate(run.state, key, episodes, deterministic))
        result[name] = {
            "mean": float(returns.mean()),
            "std": float(returns.std()),
            "per_seed_mean": [float(x) for x in returns.mean(axis=1)],
        }
        if labels:  # each point's members are consecutive on the seed axis
            for point, of_point in zip(points, returns.reshape(len(labels), -1), strict=True):
                point[name] = float(of_point.mean())
    if labels:
        result["points"] = points
    return result
