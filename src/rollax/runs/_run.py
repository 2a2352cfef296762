"""Training runs on disk for every agent: start, load, resume, evaluate, record.

``train(config, RunConfig(env=...))`` makes a run directory (see :mod:`._run_dir`), trains
the agent of ``config``'s algorithm for ``config.total_steps`` steps per seed with metrics,
progress and checkpoints, and evaluates it; ``resume(RUN_DIR)`` continues it from its newest
checkpoint. The algorithm is looked up in the registry, from the config's type or from
``config.json``; nothing here names one.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import sys
from pathlib import Path
from typing import Any

import jax

from rollax.checkpoints import Checkpointer
from rollax.runs._keys import run_keys
from rollax.runs._loop import train_loop
from rollax.runs._population import check_population
from rollax.runs._progress import compiling
from rollax.runs._registry import Algorithm, algorithm_for_config, get_algorithm
from rollax.runs._run_dir import RunDirectory, is_writer
from rollax.runs._run_state import Run, RunConfig, evaluate_state, parse_assignments
from rollax.runs._video import check_video_path
from rollax.runs._video import write_video as write_agent_video
from rollax.training import Agent, config_to_json, decode_config

__all__ = [
    "Run",
    "RunConfig",
    "enable_compilation_cache",
    "evaluate_run",
    "load_run",
    "precompile",
    "resume",
    "train",
    "write_video",
]


def env_params_for(agent: Agent, run_config: RunConfig) -> Any:
    """The environment params a run starts with: the defaults with ``env_params`` set.

    Raises:
        ValueError: a name the params do not have, or a value of the wrong kind, naming the
            valid fields (before anything compiles).
    """
    values = parse_assignments(run_config.env_params, "env_params")
    default = agent.env.default_params
    try:
        return default.replace(**values)
    except TypeError as e:
        raise ValueError(f"--env-params for {run_config.env}: {e}") from None


def compilation_cache_dir() -> Path:
    """The directory of JAX's persistent compilation cache for rollax's runs (not created).

    ``$ROLLAX_CACHE_DIR`` if set, else ``rollax/jax`` under ``$XDG_CACHE_HOME`` (default
    ``~/.cache``).
    """
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "rollax" / "jax"
    return Path(os.environ.get("ROLLAX_CACHE_DIR", default))


def enable_compilation_cache() -> Path:
    """Point JAX's persistent compilation cache at rollax's directory.

    ``$ROLLAX_CACHE_DIR`` if set, else ``rollax/jax`` under ``$XDG_CACHE_HOME`` (default
    ``~/.cache``), created if missing. Every program is kept, however quick its compile: a
    program quick to compile on one machine (a small evaluation on a GPU host) is not on
    another, and a run in a new process then compiles none of what a run before it did.
    ``$JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS``, if set, keeps only programs slower to
    compile (rollax's test suite keeps those of 0.5 s and more).
    """
    path = compilation_cache_dir()
    path.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(path))
    if _MIN_COMPILE_TIME not in os.environ:  # else JAX has read it
        jax.config.update(_MIN_COMPILE_TIME.lower(), 0.0)
    return path


_MIN_COMPILE_TIME = "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"
"""JAX's setting (and environment variable) of the shortest compile the cache keeps."""


def evaluations(config: RunConfig) -> list[int]:
    """The evaluations a run ends with, for ``Agent.warmup``: its number of episodes."""
    return [config.eval_episodes] if config.eval_episodes else []


def _compiled_agent(
    algorithm: Algorithm, config: Any, run_config: RunConfig
) -> tuple[Agent, Any, int]:
    """A new run's agent and environment params, with its programs compiled.

    Through the persistent compilation cache if the run keeps one.

    Returns:
        ``(agent, env_params, programs)``: the agent's config holds the shards its layout
        chose (what the run keeps).

    Raises:
        ValueError: params or a population the agent cannot take (before anything compiles).
    """
    if run_config.compilation_cache:
        enable_compilation_cache()
    agent = algorithm.make(config, run_config.env, **run_config.make_options)
    if config.num_shards is None and agent.config.num_shards > 1 and is_writer():
        print(
            f"rollax: num_shards={agent.config.num_shards}: each seed's environments are split "
            f"over {agent.layout.data_devices} devices, one shard each (--num-shards sets it; "
            "the run keeps it on any devices).",
            file=sys.stderr,
        )
    env_params = env_params_for(agent, run_config)  # checked before anything compiles
    check_population(agent, run_config)
    programs = _warmup(agent, algorithm, run_config, env_params, init=True)
    return agent, env_params, programs


def _warmup(
    agent: Agent, algorithm: Algorithm, run_config: RunConfig, env_params: Any, init: bool,
    progress: bool | None = None,
) -> int:  # fmt: skip
    """Compile a run's programs side by side, saying so on stderr.

    The programs: init (unless ``init`` is False), training and the final evaluation. Said
    unless ``progress`` (default: the run's) is off.

    Returns:
        The number of programs.
    """
    shown = run_config.progress if progress is None else progress
    with compiling(algorithm.name.upper(), shown and is_writer()) as announce:
        return agent.warmup(evaluations(run_config), env_params, init=init, compiling=announce)


def run_dir_for(config: RunConfig, algorithm: Algorithm) -> Path:
    """A run's directory: ``config.run_dir``, or ``runs/ENV-ALGO-TIME`` when it is empty."""
    if config.run_dir:
        return Path(config.run_dir)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    env = config.env.replace("/", "-").replace(":", "-")  # one directory, whatever the id
    return Path("runs") / f"{env}-{algorithm.name}-{stamp}"


def train(config: Any, run_config: RunConfig, callback: Any = None) -> Path:
    """Start a run: make its directory, train for ``config.total_steps``, evaluate.

    Args:
        config: A registered algorithm's configuration (``PPOConfig``, ...).
        run_config: The environment, seed, directory, logging and checkpointing.
        callback: ``callback(run, row)``, called after each logged chunk with the
            :class:`Run` and its ``metrics.csv`` row: it may replace ``run.state`` by one of
            the same shapes (new environment params or per-seed hyperparameters, with no
            recompile) and stop the run by returning ``False`` (a checkpoint is saved, and
            ``resume`` with the same callback goes on as if the run had never stopped,
            provided the callback decides from the run rather than from its own memory).

    Returns:
        The run directory.

    Raises:
        ValueError: an invalid configuration, or a run directory that already holds a run
            (resume it instead).
        TypeError: a configuration no registered algorithm takes.
    """
    algorithm = algorithm_for_config(config)
    config.validate()
    run_config.validate()
    config_to_json(config)  # what config.json cannot record (a lambda) is refused here
    directory = RunDirectory(run_dir_for(run_config, algorithm))
    if directory.holds_run():
        raise ValueError(
            f"run_dir {str(directory.path)!r} already holds a run; continue it with "
            f"`rollax resume {directory.path}` or choose another --run-dir."
        )
    agent, env_params, _ = _compiled_agent(algorithm, config, run_config)
    config = agent.config  # with the shards the layout chose: what the run keeps
    run = Run(
        directory=directory,
        algorithm=algorithm,
        config=config,
        run_config=dataclasses.replace(run_config, run_dir=str(directory.path)),
        agent=agent,
        state=agent.init(run_keys(run_config.seed).init, env_params),
        checkpoints=Checkpointer(directory.checkpoints, run_config.keep_checkpoints),
    )
    directory.write_config(run.config_json())
    train_loop(run, callback)
    return directory.path


def precompile(config: Any, run_config: RunConfig) -> int:
    """Compile a run's programs into the persistent compilation cache, and train nothing.

    A run started later with the same configurations, in any process on this machine, reads
    them from the cache instead of compiling (``rollax train --compile-only``: a cluster's
    first node, or a CI job's warm-up). No run directory is made.

    Returns:
        The number of programs compiled (or found in the cache already).

    Raises:
        ValueError: an invalid configuration, or ``run_config.compilation_cache`` off.
        TypeError: a configuration no registered algorithm takes.
    """
    algorithm = algorithm_for_config(config)
    config.validate()
    run_config.validate()
    if not run_config.compilation_cache:
        raise ValueError(
            "--compile-only compiles into the compilation cache: it cannot be combined with "
            "--no-compilation-cache (RunConfig.compilation_cache=False)."
        )
    programs = _compiled_agent(algorithm, config, run_config)[2]
    if is_writer():
        print(
            f"rollax: {programs} programs in the compilation cache {compilation_cache_dir()}; "
            "a run with these options starts without compiling them.",
            file=sys.stderr,
        )
    return programs


_NO_PBT = {
    "pbt_interval": 0,
    "pbt_explore": [],
    "pbt_fraction": 0.25,
    "pbt_perturb": 0.2,
    "pbt_resample": 0.25,
    "pbt_replay": "",
}
"""The PBT fields of a run written before population-based training existed."""


def read_run_config(directory: RunDirectory) -> tuple[Algorithm, Any, RunConfig]:
    """The algorithm and both configurations of a run, from its ``config.json``.

    Raises:
        ValueError: no run there, an unknown algorithm, or a configuration that does not fit
            this version (a :class:`~rollax.training.ConfigError` naming the field).
    """
    stored = directory.read_config()
    where = str(directory.config)
    algorithm = get_algorithm(stored.get("algo"))
    # Runs written before the registry kept the algorithm's config under its name.
    section = "config" if "config" in stored else algorithm.name
    for name in (section, "run"):
        if name not in stored:
            raise ValueError(f"{where} lacks its {name!r} section.")
    fields = stored[section]
    if isinstance(fields, dict):  # runs written before sweeps existed had none
        fields = {"sweep": [], **fields}
    config = decode_config(algorithm.config_type, fields, f"{where}: {section!r}")
    run_fields = stored["run"]
    if isinstance(run_fields, dict):  # runs written before the trackers existed had none
        run_fields = {"wandb": "", "mlflow": "", **run_fields}
        # ... nor population-based training.
        run_fields = {**_NO_PBT, **run_fields}
        if "checkpoint_minutes" not in run_fields:
            # Runs written before checkpoints by time: checkpoint_every=0 was a tenth of the
            # budget, and nothing counted minutes.
            every = run_fields.get("checkpoint_every") or max(config.total_steps // 10, 1)
            run_fields = {**run_fields, "checkpoint_every": every, "checkpoint_minutes": 0.0}
    run_config = decode_config(RunConfig, run_fields, f"{where}: 'run'")
    return algorithm, config, run_config


def load_run(
    directory: str | Path,
    total_steps: int | None = None,
    for_training: bool = False,
    devices: int | str | None = None,
) -> Run:
    """Rebuild a run from its directory and restore its newest checkpoint.

    Args:
        directory: The run directory.
        total_steps: A new budget (applied through the agent's ``with_budget``: its
            learning-rate schedule, and DQN's exploration, stretch to it).
        for_training: Compile the training programs side by side now, and start a run that
            stopped before its first checkpoint afresh instead of raising.
        devices: Another device count (or ``"all"``): the checkpoint restores straight into
            the new layout's shardings; a layout that cannot hold the run (a data axis that
            does not divide its shards) is a ``ValueError`` and leaves it intact. ``None``:
            the run's own for training, one device for inspection (evaluation, video), so
            a run trained on many devices can be inspected anywhere.

    Raises:
        ValueError: no run there, a config that does not fit, or a ``total_steps`` below
            what is already trained.
        CheckpointError: a missing, damaged or incompatible checkpoint.
    """
    return _load_run(directory, total_steps, for_training, devices)


def _load_run(
    directory: str | Path, total_steps: int | None, for_training: bool,
    devices: int | str | None, progress: bool | None = None,
) -> Run:  # fmt: skip
    """:func:`load_run`; it says it compiles unless ``progress`` (default: the run's) is off."""
    run_dir = RunDirectory(Path(directory))
    algorithm, config, run_config = read_run_config(run_dir)
    if total_steps is not None:
        config = config.replace(total_steps=total_steps)
    if devices is None and not for_training:
        devices = 1
    if devices is not None:
        config = config.replace(devices=devices)
    config.validate()
    agent = algorithm.make(config, run_config.env, **run_config.make_options)
    checkpoints = Checkpointer(run_dir.checkpoints, run_config.keep_checkpoints)
    new_budget = total_steps is not None
    fresh = for_training and checkpoints.latest_step() is None
    if for_training and run_config.compilation_cache:
        enable_compilation_cache()  # before the warmup, which reads and fills it
    if for_training:  # init is compiled only for a run that starts afresh
        _warmup(agent, algorithm, run_config, env_params_for(agent, run_config), fresh, progress)
    if fresh:
        # Stopped before its first checkpoint: nothing was trained, so start it afresh.
        state = agent.init(run_keys(run_config.seed).init, env_params_for(agent, run_config))
    else:
        template = jax.eval_shape(lambda k: agent.to_checkpoint(agent.init(k)), jax.random.key(0))
        shardings = agent.shardings(template) if agent.layout.mesh is not None else None
        saved, stored = checkpoints.restore(template, shardings=shardings)
        state = agent.from_checkpoint(saved)
        # A resume with a new budget writes config.json before its first checkpoint: killed
        # in between, the newest checkpoint still holds the old budget's schedules.
        new_budget = new_budget or _stored_budget(stored) != config.total_steps
    done = int(state.env_steps)
    if config.total_steps < done:
        raise ValueError(
            f"--total-steps {config.total_steps} is below the {done} steps this run has "
            f"already trained; give at least {done}."
        )
    if new_budget:
        state = agent.with_budget(state, config.total_steps)
    return Run(run_dir, algorithm, config, run_config, agent, state, checkpoints)


def _stored_budget(stored: dict[str, Any]) -> Any:
    """The ``total_steps`` a checkpoint's configuration records (``None`` if none)."""
    section = stored.get("config")
    return section.get("total_steps") if isinstance(section, dict) else None


def resume(
    directory: str | Path,
    total_steps: int | None = None,
    devices: int | str | None = None,
    progress: bool | None = None,
    callback: Any = None,
) -> Path:
    """Continue a run from its newest checkpoint until its (possibly new) budget is spent.

    ``devices``: continue on another number of devices (see :func:`load_run`).
    ``progress``: show a progress bar or not (``None``: as the run was started).
    ``callback``: as :func:`train`'s; give the same one to go on as the run would have.
    """
    run = _load_run(directory, total_steps, True, devices, progress)
    if progress is not None:
        run.run_config = dataclasses.replace(run.run_config, progress=progress)
    if total_steps is not None or devices is not None:
        run.directory.write_config(run.config_json())
    # What a kill left: temporary files, incomplete checkpoints, rows and population events
    # past the checkpoint.
    run.directory.discard_temporaries()
    run.checkpoints.tidy()
    run.directory.truncate_metrics(run.env_steps)
    run.directory.truncate_population(run.env_steps)
    train_loop(run, callback)
    return run.directory.path


def evaluate_run(directory: str | Path, episodes: int = 32) -> dict[str, Any]:
    """Evaluate the newest checkpoint of a run, with the deterministic and the stochastic policy.

    Returns:
        ``{"env_steps", "episodes_per_seed", "deterministic", "stochastic"}``, each policy's
        entry holding the ``mean``, ``std`` and ``per_seed_mean`` of the returns over
        ``episodes`` episodes per seed (the content of a run's ``eval.json``).
    """
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise ValueError(f"--episodes must be a positive integer, got {episodes!r}.")
    return evaluate_state(load_run(directory), episodes)


def write_video(directory: str | Path, path: str | Path, fps: int = 30) -> tuple[Path, float]:
    """Record one episode of the newest checkpoint's deterministic policy (seed 0).

    A run logged to trackers (``--wandb``, ``--mlflow``) gets the video there too, in the
    tracker runs it already has.

    Returns:
        ``(path, episode_return)``.

    Raises:
        ValueError: an unsupported extension, or an environment that cannot be recorded.
    """
    from rollax.runs._trackers import open_trackers

    path = check_video_path(path, directory)
    run = load_run(directory)
    video_key = run_keys(run.run_config.seed).video
    path, episode_return = write_agent_video(run.agent, run.state, video_key, path, fps)
    for tracker in open_trackers(run.directory, run.run_config, {}, continuing_only=True):
        tracker.upload(Path(path))
        tracker.close()
    return path, episode_return
