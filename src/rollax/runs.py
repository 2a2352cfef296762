"""Training runs on disk: a run directory, a progress bar, checkpoints, resume and evaluation.

A run directory holds everything about one run::

    RUN_DIR/
      config.json      the algorithm, environment, PPOConfig and RunConfig (what resume reads)
      metrics.csv      one row per logging interval
      tb/              TensorBoard event files
      curve.png        the learning curve, redrawn at every checkpoint
      checkpoints/     Orbax checkpoints, one directory per environment step
      eval.json        returns of the final policy (after the budget is spent)

Files are written so that an interruption at any moment leaves a usable directory: JSON and
PNG files through a temporary file and a rename, checkpoints by Orbax's atomic finalization,
and ``metrics.csv`` rows only appended (resume drops rows past the checkpoint it continues).
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import datetime
import json
import math
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rollax.agents.ppo import PPOConfig, make_trainer
from rollax.checkpoints import Checkpointer
from rollax.networks import is_image_key
from rollax.training import decode_config, run_keys

__all__ = ["RunConfig", "evaluate_run", "resume", "train", "write_video"]

METRIC_FIELDS = (
    "env_steps",
    "updates",
    "wall_time",
    "steps_per_second",
    "episode_return",
    "episodes",
    "policy_loss",
    "value_loss",
    "entropy",
    "approx_kl",
)


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """How a training run is carried out (what it learns is the algorithm's config)."""

    env: str = "CartPole-v1"
    """Registered environment id (see rollax.registered_envs())."""
    seed: int = 0
    """Seed of the whole run: parameters, environments and minibatches."""
    run_dir: str = ""
    """Directory of the run; empty: runs/<env>-ppo-<date>-<time>."""
    checkpoint_every: int = 0
    """Environment steps per seed between checkpoints, rounded up to whole rollouts; 0: a
    tenth of the budget. One is always written at the end and on SIGTERM or SIGINT."""
    keep_checkpoints: int = 3
    """How many of the newest checkpoints to keep."""
    log_every: int = 0
    """Environment steps per seed between rows of metrics.csv, rounded up to whole rollouts;
    0: about 100 rows over the budget."""
    eval_episodes: int = 32
    """Episodes per seed evaluated with the final policy (0: no final evaluation)."""
    compilation_cache: bool = True
    """Keep compiled programs in ~/.cache/rollax/jax (or $ROLLAX_CACHE_DIR) so that the next
    run with the same shapes starts without compiling."""
    progress: bool = True
    """Show a progress bar (steps, steps/s, recent return, time left)."""

    def validate(self) -> None:
        """Raise a ``ValueError`` naming the first invalid field and what would be valid."""
        for name in ("seed", "checkpoint_every", "log_every", "eval_episodes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"RunConfig.{name} must be an integer >= 0, got {value!r}.")
        value = self.keep_checkpoints
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"RunConfig.keep_checkpoints must be >= 1, got {value!r}.")


def enable_compilation_cache() -> Path:
    """Point JAX's persistent compilation cache at rollax's cache directory."""
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "rollax" / "jax"
    path = Path(os.environ.get("ROLLAX_CACHE_DIR", default))
    path.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
    return path


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _round_up(steps: int, batch: int) -> int:
    return max(batch, math.ceil(steps / batch) * batch)


@dataclasses.dataclass
class _Run:
    """A run being trained: its directory, trainer, state and writers."""

    directory: Path
    algo_config: PPOConfig
    run_config: RunConfig
    trainer: Any
    state: Any
    checkpoints: Checkpointer

    @property
    def env_steps(self) -> int:
        return int(self.state.env_steps)

    def config_json(self) -> dict[str, Any]:
        return {
            "algo": "ppo",
            "env": self.run_config.env,
            "ppo": dataclasses.asdict(self.algo_config),
            "run": dataclasses.asdict(self.run_config),
        }


def _run_dir_for(config: RunConfig) -> Path:
    if config.run_dir:
        return Path(config.run_dir)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("runs") / f"{config.env}-ppo-{stamp}"


def train(algo_config: PPOConfig, run_config: RunConfig) -> Path:
    """Start a run: make the directory, train for ``algo_config.total_steps``, evaluate.

    Raises:
        ValueError: an invalid configuration, or a run directory that already holds a run
            (resume it instead).
    """
    algo_config.validate()
    run_config.validate()
    directory = _run_dir_for(run_config)
    if (directory / "config.json").exists():
        raise ValueError(
            f"run_dir {str(directory)!r} already holds a run; continue it with "
            f"`rollax resume {directory}` or choose another --run-dir."
        )
    if run_config.compilation_cache:
        enable_compilation_cache()
    trainer = make_trainer(algo_config, run_config.env)
    trainer.warmup(_evaluations(run_config))  # init, run and evaluate compile side by side
    directory.mkdir(parents=True, exist_ok=True)
    run = _Run(
        directory=directory,
        algo_config=algo_config,
        run_config=dataclasses.replace(run_config, run_dir=str(directory)),
        trainer=trainer,
        state=trainer.init(run_keys(run_config.seed).init),
        checkpoints=Checkpointer(directory / "checkpoints", run_config.keep_checkpoints),
    )
    _write_atomic(directory / "config.json", json.dumps(run.config_json(), indent=2).encode())
    _train_loop(run)
    return directory


def load_run(
    directory: str | Path, total_steps: int | None = None, for_training: bool = False
) -> _Run:
    """Rebuild a run from its directory and restore its newest checkpoint.

    Args:
        directory: The run directory.
        total_steps: A new budget (the learning-rate schedule is stretched to it).
        for_training: Compile the training programs side by side now, and start a run that
            stopped before its first checkpoint afresh instead of raising.

    Raises:
        ValueError: no run there, or a ``total_steps`` below what is already trained.
        CheckpointError: a missing, damaged or incompatible checkpoint.
    """
    directory = Path(directory)
    config_path = directory / "config.json"
    if not config_path.is_file():
        raise ValueError(
            f"RUN_DIR {str(directory)!r} holds no run (no config.json); start one with "
            f"`rollax train ppo --env ... --run-dir {directory}`."
        )
    try:
        stored = json.loads(config_path.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"{config_path} is not valid JSON ({e}).") from e
    if not isinstance(stored, dict) or stored.get("algo") != "ppo":
        algo = stored.get("algo") if isinstance(stored, dict) else None
        raise ValueError(f"{config_path}: unknown algorithm {algo!r}; known: 'ppo'.")
    for name in ("ppo", "run"):
        if name not in stored:
            raise ValueError(f"{config_path} lacks its {name!r} section.")
    algo_config = decode_config(PPOConfig, stored["ppo"], f"{config_path}: 'ppo'")
    run_config = decode_config(RunConfig, stored["run"], f"{config_path}: 'run'")
    if total_steps is not None:
        algo_config = algo_config.replace(total_steps=total_steps)
        algo_config.validate()
    trainer = make_trainer(algo_config, run_config.env)
    checkpoints = Checkpointer(directory / "checkpoints", run_config.keep_checkpoints)
    if for_training:
        trainer.warmup(_evaluations(run_config))
    if for_training and checkpoints.latest_step() is None:
        # Stopped before its first checkpoint: nothing was trained, so start it afresh.
        state = trainer.init(run_keys(run_config.seed).init)
    else:
        state, _ = checkpoints.restore(jax.eval_shape(trainer.init, jax.random.key(0)))
    done = int(state.env_steps)
    if algo_config.total_steps < done:
        raise ValueError(
            f"--total-steps {algo_config.total_steps} is below the {done} steps this run has "
            f"already trained; give at least {done}."
        )
    if total_steps is not None and algo_config.anneal_lr:
        # Stretch the learning-rate schedule to the new budget.
        updates = jnp.full_like(
            state.hparams.anneal_updates, algo_config.total_steps // algo_config.batch_size
        )
        state = state.replace(hparams=state.hparams.replace(anneal_updates=updates))
    return _Run(directory, algo_config, run_config, trainer, state, checkpoints)


def resume(directory: str | Path, total_steps: int | None = None) -> Path:
    """Continue a run from its newest checkpoint until its (possibly new) budget is spent."""
    run = load_run(directory, total_steps, for_training=True)
    if run.run_config.compilation_cache:
        enable_compilation_cache()
    if total_steps is not None:
        _write_atomic(
            run.directory / "config.json", json.dumps(run.config_json(), indent=2).encode()
        )
    _truncate_metrics(run.directory / "metrics.csv", run.env_steps)
    _train_loop(run)
    return run.directory


def _truncate_metrics(path: Path, env_steps: int) -> None:
    """Drop rows logged after ``env_steps`` (training continues from there)."""
    if not path.is_file():
        return
    with path.open(newline="") as f:
        rows = [row for row in csv.DictReader(f) if int(row["env_steps"]) <= env_steps]
    lines = [",".join(METRIC_FIELDS)] + [",".join(row[k] for k in METRIC_FIELDS) for row in rows]
    _write_atomic(path, ("\n".join(lines) + "\n").encode())


@contextlib.contextmanager
def _stop_requests() -> Iterator[list[int]]:
    """Record SIGTERM and SIGINT instead of dying mid-step; restore the handlers after."""
    received: list[int] = []

    def handler(signum: int, frame: Any) -> None:
        received.append(signum)

    previous = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield received
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


class _Progress:
    """Progress as steps, steps/s, recent return and time left.

    A rich progress bar on a terminal; otherwise (a log file, CI) a plain line at every tenth
    of the budget.
    """

    def __init__(self, total: int, done: int, enabled: bool) -> None:
        self.total, self.bar, self.enabled = total, None, enabled
        self.next_line, self.first = 0, None
        if not enabled or not sys.stderr.isatty():
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        self.bar = Progress(
            TextColumn("[bold]PPO"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("steps"),
            TextColumn("{task.fields[rate]:>9} steps/s"),
            TextColumn("return {task.fields[ret]:>8}"),
            TimeRemainingColumn(),
        )
        self.task = self.bar.add_task("train", total=total, completed=done, rate="-", ret="-")
        self.bar.start()

    def update(self, done: int, rate: float, ret: float | None) -> None:
        shown = "-" if ret is None else f"{ret:.1f}"
        if self.bar is not None:
            self.bar.update(self.task, completed=done, rate=f"{rate:,.0f}", ret=shown)
        elif self.enabled and (done >= self.next_line or done >= self.total):
            self.next_line = done + self.total // 10
            # Time left from the pace after the first chunk, which includes compiling.
            if self.first is None:
                self.first, left = (time.perf_counter(), done), "?"
            else:
                pace = (time.perf_counter() - self.first[0]) / max(done - self.first[1], 1)
                left = f"{pace * (self.total - done):.0f}"
            print(
                f"PPO {done}/{self.total} steps  {rate:,.0f} steps/s  return {shown}  "
                f"{left} s left",
                file=sys.stderr,
                flush=True,
            )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


def _evaluations(config: RunConfig) -> list[tuple[int, bool]]:
    """The evaluations a run ends with, for ``Trainer.warmup``."""
    return [(config.eval_episodes, d) for d in (True, False)] if config.eval_episodes else []


def _train_loop(run: _Run) -> None:
    """Train until the budget is spent, logging and checkpointing; save and exit on signals."""
    from tensorboardX import SummaryWriter

    cfg, rc = run.algo_config, run.run_config
    batch = cfg.batch_size
    total = cfg.total_steps
    log_every = _round_up(rc.log_every or total // 100, batch)
    ckpt_every = _round_up(rc.checkpoint_every or total // 10, batch)
    metrics_path = run.directory / "metrics.csv"
    new_file = not metrics_path.is_file()
    # On resume, TensorBoard drops what an earlier session logged past this checkpoint.
    writer = SummaryWriter(str(run.directory / "tb"), purge_step=run.env_steps or None)
    progress = _Progress(total, run.env_steps, rc.progress)
    last_ckpt = run.env_steps
    recent: float | None = None
    try:
        with metrics_path.open("a", newline="") as f, _stop_requests() as stops:
            rows = csv.writer(f)
            if new_file:
                rows.writerow(METRIC_FIELDS)
            while run.env_steps < total and not stops:
                chunk = min(log_every, total - run.env_steps)
                start = time.perf_counter()
                run.state, metrics = run.trainer.run(run.state, chunk)
                metrics = jax.device_get(metrics)
                seconds = time.perf_counter() - start
                episodes = np.asarray(metrics["episodes"])
                interval: float | None = None  # mean return of episodes ended in this chunk
                if episodes.sum() > 0:
                    returns = np.asarray(metrics["episode_return"])
                    interval = recent = float(returns[episodes > 0].mean())
                row = _row(run, metrics, seconds, chunk, interval)
                rows.writerow([row[k] for k in METRIC_FIELDS])
                f.flush()
                for name in METRIC_FIELDS[3:]:
                    if row[name] != "":
                        writer.add_scalar(f"train/{name}", float(row[name]), run.env_steps)
                progress.update(run.env_steps, row["steps_per_second"], recent)
                if run.env_steps - last_ckpt >= ckpt_every and run.env_steps < total:
                    _checkpoint(run)
                    last_ckpt = run.env_steps
            if run.checkpoints.latest_step() != run.env_steps:
                _checkpoint(run)
            if rc.eval_episodes and not stops:
                # Inside the signal handlers: a signal now ends the run after the evaluation.
                result = evaluate_run_state(run, rc.eval_episodes)
                _write_atomic(run.directory / "eval.json", json.dumps(result, indent=2).encode())
                for name in ("deterministic", "stochastic"):
                    writer.add_scalar(f"eval/{name}_return", result[name]["mean"], run.env_steps)
                print(
                    f"Trained {run.env_steps} steps per seed; final return over "
                    f"{rc.eval_episodes} episodes per seed: "
                    f"{result['deterministic']['mean']:.1f} (deterministic), "
                    f"{result['stochastic']['mean']:.1f} (stochastic).",
                    file=sys.stderr,
                )
            if stops:
                progress.close()
                name = signal.Signals(stops[0]).name
                print(
                    f"{name} received: saved a checkpoint at step {run.env_steps} in "
                    f"{run.directory}; continue with `rollax resume {run.directory}`.",
                    file=sys.stderr,
                )
                raise SystemExit(128 + stops[0])
    finally:
        progress.close()
        writer.close()
    print(f"Run directory: {run.directory}", file=sys.stderr)


def _row(run: _Run, metrics: dict, seconds: float, chunk: int, returns: float | None) -> dict:
    """A metrics.csv row; ``episode_return`` is empty when no episode ended in the chunk."""
    seeds = run.algo_config.num_seeds
    episodes = int(np.asarray(metrics["episodes"]).sum())
    row: dict[str, Any] = {
        "env_steps": run.env_steps,
        "updates": int(run.state.updates),
        "wall_time": f"{time.time():.3f}",
        "steps_per_second": chunk * seeds / max(seconds, 1e-9),
        "episode_return": "" if returns is None else f"{returns:.4f}",
        "episodes": episodes,
    }
    for name in ("policy_loss", "value_loss", "entropy", "approx_kl"):
        row[name] = f"{float(np.mean(metrics[name])):.6g}"
    row["steps_per_second"] = round(row["steps_per_second"], 1)
    return row


def _checkpoint(run: _Run) -> None:
    run.checkpoints.save(run.env_steps, run.state, run.config_json())
    plot_curve(run.directory)


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
    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=100)
    ax.plot(steps, returns)
    ax.set_xlabel("environment steps per seed")
    ax.set_ylabel("episode return (mean over seeds)")
    ax.set_title(f"PPO on {config['env']}")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    out = directory / "curve.png"
    tmp = directory / f".curve.tmp-{os.getpid()}.png"
    fig.savefig(tmp)
    plt.close(fig)
    os.replace(tmp, out)
    return out


def evaluate_run_state(run: _Run, episodes: int) -> dict[str, Any]:
    """Mean and spread of the return with the deterministic and the stochastic policy."""
    key = run_keys(run.run_config.seed).evaluate
    result: dict[str, Any] = {"env_steps": run.env_steps, "episodes_per_seed": episodes}
    for name, deterministic in (("deterministic", True), ("stochastic", False)):
        returns = np.asarray(run.trainer.evaluate(run.state, key, episodes, deterministic))
        result[name] = {
            "mean": float(returns.mean()),
            "std": float(returns.std()),
            "per_seed_mean": [float(x) for x in returns.mean(axis=1)],
        }
    return result


def evaluate_run(directory: str | Path, episodes: int = 32) -> dict[str, Any]:
    """Evaluate the newest checkpoint of a run (see :func:`evaluate_run_state`)."""
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise ValueError(f"--episodes must be a positive integer, got {episodes!r}.")
    return evaluate_run_state(load_run(directory), episodes)


def check_video_path(path: str | Path, directory: str | Path | None = None) -> Path:
    """Check a video path (and, given ``directory``, that the run's environment renders).

    Raises:
        ValueError: a suffix other than ``.gif``/``.mp4``, or an environment without render.
    """
    path = Path(path)
    if path.suffix.lower() not in (".gif", ".mp4"):
        raise ValueError(f"--video must end in .gif or .mp4, got {str(path)!r}.")
    config_path = Path(directory or "") / "config.json"
    if directory is not None and config_path.is_file():
        from rollax.envs import make

        env_id = json.loads(config_path.read_text())["env"]
        env = make(env_id)
        if not env.can_render and not _image_keys(env.observation_space):
            raise ValueError(
                f"--video: {env_id} cannot render (it has no render method) and observes no "
                f"images; the classic-control environments, the mazes, PixelCartPole-v1 and "
                f"gymnax's MinAtar games can be recorded."
            )
    return path


def _image_keys(space: Any) -> list[str]:
    """The ``"pixels/..."`` keys of a dict observation space (none for other spaces)."""
    from rollax.spaces import Dict

    if not isinstance(space, Dict):
        return []
    return sorted(k for k in space.spaces if is_image_key(k))


def write_video(directory: str | Path, path: str | Path, fps: int = 30) -> tuple[Path, float]:
    """Record one episode of the newest checkpoint's deterministic policy (seed 0).

    The format follows the extension: ``.gif``, or ``.mp4`` (needs ``imageio-ffmpeg``).

    Returns:
        ``(path, episode_return)``.

    Raises:
        ValueError: an unsupported extension; TypeError: an environment that cannot render.
    """
    import imageio.v3 as iio

    path = check_video_path(path, directory)
    run = load_run(directory)
    frames, episode_return = _record_episode(run)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp-{os.getpid()}{path.suffix}")
    if path.suffix.lower() == ".gif":
        iio.imwrite(tmp, frames, duration=1000 / fps, loop=0)
    else:
        try:
            iio.imwrite(tmp, frames, fps=fps, codec="libx264", macro_block_size=1)
        except Exception as e:  # imageio raises ImportError or its own error without ffmpeg
            tmp.unlink(missing_ok=True)
            raise ValueError(
                f"Writing {path.name} needs imageio-ffmpeg (pip install 'rollax[video]'); "
                f"a .gif needs nothing more ({type(e).__name__}: {e})."
            ) from e
    os.replace(tmp, path)
    return path, episode_return


def _record_episode(run: _Run) -> tuple[np.ndarray, float]:
    """Frames uint8 ``(T + 1, H, W, 3)`` of one episode and its return."""
    from rollax.envs import VecEnv

    trainer = run.trainer
    seeds = run.algo_config.num_seeds
    env = VecEnv(trainer.env.env, seeds, "disabled", "on_done", trainer.env.env_id)
    if not env.can_render and not _image_keys(env.observation_space):
        env.render(None)  # raises the TypeError that explains it
    horizon = int(env.default_params.max_episode_steps)
    params = run.state.env_params

    def frame_of(env_state: Any, obs: Any) -> jax.Array:
        """The scene with the agent's view beside it, or the view alone without a renderer."""
        scene = env.render(env_state, params)[0] if env.can_render else None
        return _with_agent_view(scene, obs)

    @jax.jit
    def episode(state: Any, key: jax.Array) -> tuple:
        k_reset, k_act = jax.random.split(key)
        env_state, ts = env.reset(k_reset, params)
        first = frame_of(env_state, ts.obs)

        def step(carry: tuple, key: jax.Array) -> tuple:
            env_state, obs, done, total = carry
            obs = jax.tree.map(lambda x: x[:, None], obs)
            action = trainer.act(state, obs, key, True)[:, 0]
            env_state, ts = env.step(env_state, action.astype(env.action_space.dtype), params)
            total = total + jnp.where(done, 0.0, ts.reward)
            frame = frame_of(env_state, ts.obs)
            return (env_state, ts.obs, done | ts.done, total), (frame, done[0])

        carry = (env_state, ts.obs, jnp.zeros(seeds, jnp.bool_), jnp.zeros(seeds, jnp.float32))
        (_, _, _, total), (frames, was_done) = jax.lax.scan(
            step, carry, jax.random.split(k_act, horizon)
        )
        return first, frames, was_done, total[0]

    first, frames, was_done, total = jax.device_get(
        episode(run.state, run_keys(run.run_config.seed).video)
    )
    length = int(np.argmax(was_done)) if was_done.any() else horizon
    return np.concatenate([first[None], frames[:length]]), float(total)


def _with_agent_view(scene: jax.Array | None, obs: Any) -> jax.Array:
    """The rendered scene, and to its right what the agent saw (each camera's newest frame).

    For dict observations with ``"pixels/..."`` images (first environment of the batch),
    each image (:func:`_as_rgb`) is scaled up by a whole factor to the scene's height (to at
    least 96 pixels without a scene) and placed beside it; other observations add nothing.
    """
    keys = sorted(k for k in obs if is_image_key(k)) if isinstance(obs, dict) else []
    images = [_as_rgb(obs[key][0]) for key in keys]
    if scene is None:
        factors = [-(-96 // image.shape[0]) for image in images]
        height = max(image.shape[0] * f for image, f in zip(images, factors, strict=True))
    else:
        height = scene.shape[0]
        factors = [max(1, height // image.shape[0]) for image in images]
    panels = [] if scene is None else [scene]
    for image, f in zip(images, factors, strict=True):
        image = jnp.repeat(jnp.repeat(image, f, axis=0), f, axis=1)[:height]
        image = jnp.pad(image, ((0, height - image.shape[0]), (2, 0), (0, 0)), constant_values=255)
        panels.append(image)
    return jnp.concatenate(panels, axis=1)


_BOARD_COLORS = np.array(
    [[230, 25, 75], [60, 180, 75], [255, 225, 25], [0, 130, 200], [245, 130, 48],
     [145, 30, 180], [70, 240, 240], [240, 50, 230], [210, 245, 60], [128, 128, 128]],
    np.uint8,
)  # fmt: skip
"""Colours of the channels of a board-like image (MinAtar's), channel by channel."""


def _as_rgb(image: jax.Array) -> jax.Array:
    """uint8 ``(H, W, 3)`` of one observed image.

    Images whose channels come in threes (RGB frames, stacked or not) show their newest
    frame, the last three channels. Other images (MinAtar's boards: one channel per kind of
    object) are painted: each pixel takes the colour of its highest lit channel, black where
    none is lit.
    """
    channels = image.shape[-1]
    if channels % 3 == 0:
        return image[..., -3:].astype(jnp.uint8)
    colors = jnp.asarray(_BOARD_COLORS[np.arange(channels) % len(_BOARD_COLORS)])
    lit = image > 0
    top = channels - 1 - jnp.argmax(lit[..., ::-1], axis=-1)
    return jnp.where(lit.any(-1, keepdims=True), colors[top], jnp.zeros((), jnp.uint8))
