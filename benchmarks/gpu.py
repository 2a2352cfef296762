"""rollax on one accelerator, every figure beside its peer's, in one script.

Written for a GPU lent for a few minutes (an H100 ran the sections before ``agents`` in
340 s; the later ones are not yet measured: run them in a device call of their own), with the
peers in the same process.
Sections (``--only`` runs some of them):

- ``stepping``: CartPole-v1 and Breakout-MinAtar at 4,096 and 65,536 environments: rollax's
  default reset strategy on this backend, every fresh strategy and no reset at all (the
  floor), against gymnax under ``vmap`` with its own autoreset. Random actions from one
  table, a jitted ``lax.scan``; medians of ``--repeats``, compilation excluded.
- ``ppo``: CartPole time to 475 with rejax's settings, 16 seeds in one program each
  (compile + training until half the seeds, and until every seed, evaluate at 475, within
  rejax's 100k-step budget), and Breakout-MinAtar's
  wall time for 1M steps per seed with gymnax-blines' settings, 16 seeds, against rejax.
- ``offpolicy``: DQN on CartPole and SAC on Pendulum, time to threshold, against rejax.
- ``craftax``: PPO steps/s on Craftax-Classic-Symbolic with the Craftax authors' settings
  (1,024 environments x 64 steps, 3 x 512 networks; rollax's PPO runs them, as the authors'
  code is not a package) and with rollax's preset.
- ``pixels``: PPO from pixels on PixelCartPole-v1 to a return of 400, compile included.
- ``sweep``: a 64-member PPO sweep on CartPole in one program (8 learning rates x 8 entropy
  bonuses), against rejax's PPO mapped over 64 keys for the same steps (rejax's
  hyperparameters are not data, so its 64 runs share one).
- ``agents``: the newer agents at a GPU's scale. PQN on Breakout-MinAtar (its preset, 16
  seeds, 1M steps) against rejax's PQN with purejaxql's MinAtar settings, and PQN's
  Craftax-Classic preset (steps/s and return after 1M steps). TD3 in FastTD3's manner
  (``FASTTD3``: 1,024 environments, batches of 32,768, a C51 critic) on Brax's Ant and
  Humanoid, against rejax's TD3 with the same settings where it has them (its networks
  are 64 x 64 and its critic is not distributional): wall time and return after 1M steps.
- ``playground``: MuJoCo Playground's CartpoleBalance and WalkerWalk (MJX physics).
  rollax's default reset strategy (``pool``: a reset is a physics forward pass, worth
  batching) and ``every_step`` against ``wrap_for_brax_training`` with its cached reset and
  with ``full_reset=True`` (``benchmarks/worlds.py``'s variants: steps/s and freshness at
  1,024 and 8,192 environments, in 1,000-step and in 16-step episodes), and rollax's PPO
  against Brax's PPO with Playground's published settings (``benchmarks/returns.py``'s peer),
  one seed each for 9.8M steps, rollax with each task's preset at Playground's batch
  (``playground_ppo``; WalkerWalk's preset is that batch): wall time and return.
- ``pbt``: population-based training on Craftax-Classic-Symbolic: ``benchmarks/pbt.py``'s
  two arms (8 members from the same learning-rate x entropy grid, with and without PBT) with
  rollax's Craftax preset, 524,288 steps per member, one repeat: the wall time of each arm,
  their ratio, and each arm's chosen member evaluated on fresh episodes. At this budget it
  measures what PBT costs at Craftax's scale, not what it learns.
- ``compile``: ``benchmarks/compile.py``'s rows (PPO, recurrent PPO, PQN, DQN with
  prioritized replay, SAC and TD3 against rejax; PPO on Breakout-MinAtar against rejax with
  gymnax-blines' settings; pixel PPO; PPO on Playground's CartpoleBalance against Brax's at
  Playground's published batch; PPO on Craftax-Classic), each leg in fresh processes of
  this device with no persistent cache: the seconds XLA compiles each program (rollax's
  programs alone and in its real run, beside the peer's), how many programs a run compiles,
  and the optimized HLO's instructions and fusions. Not yet measured on a GPU (44
  processes at ``--repeats 1``): run it in a device call of its own.

- ``host``: PPO on ALE's Breakout-v5 stepped on the host with CleanRL's settings and the
  learner on this device: steps/s synchronous and overlapped (``acting_lag=1``, acting on
  the CPU), the environments alone and the learner alone for the same iterations (the
  overlapped wall time over the larger of the two: goal at most 1.15), and with
  ``CLEANRL_SCRIPT=PATH`` (CleanRL's ``ppo_atari_envpool_xla_jax_scan.py``, fetched) the
  whole-process steps/s of rollax and of that script (``benchmarks/atari.py``'s runs).

Each section prints one JSON line as it finishes (``{"section": ..., ...}``), so a run cut
off still returns what it measured; a section that fails prints its error and the others
go on. The last line is one JSON object with every figure, the device and the versions.
``--tiny`` runs every section at toy sizes on the CPU (a smoke test, ``tests/test_benchmarks.py``).

The lent machines have JAX but not every peer: ``make gpu-wheels`` downloads the missing
wheels for their Python (see the Benchmarks page, "On a GPU").

Usage:
    python benchmarks/gpu.py [--only stepping ppo ...] [--tiny] [--repeats 3]
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib.metadata
import importlib.util
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from typing import Any

import jax
import numpy as np

from _common import Timed, median_seconds, random_actions, rollax_rollout
from _harness import Parser, banner, emit, ratio
from _peers import gymnax_rollout, rejax_train_seeds


@dataclasses.dataclass(frozen=True)
class Sizes:
    """How much each section does: the full sizes for a GPU, the tiny ones for a CPU check."""

    step_envs: tuple[int, ...] = (4_096, 65_536)
    """Batch sizes of the stepping section."""
    step_tasks: tuple[tuple[str, str], ...] = (
        ("CartPole-v1", "CartPole-v1"),
        ("gymnax/Breakout-MinAtar", "Breakout-MinAtar"),
    )
    """The stepping section's environments: (rollax id, gymnax id) pairs."""
    step_steps: int = 1_000
    """Steps per timed rollout."""
    ppo_seeds: int = 16
    """Seeds in one program (PPO sections)."""
    cartpole_total: int = 100_000
    """CartPole's PPO budget per seed (rejax's)."""
    cartpole_chunk: int = 5_000
    """Steps between evaluations on CartPole."""
    minatar_steps: int = 1_048_576
    """Breakout-MinAtar's budget per seed (0: Breakout is left out)."""
    episodes: int = 32
    """Evaluation episodes."""
    dqn_total: int = 100_000
    """DQN's budget on CartPole."""
    dqn_chunk: int = 5_000
    """DQN's steps between evaluations."""
    sac_total: int = 10_000
    """SAC's budget on Pendulum."""
    sac_chunk: int = 1_000
    """SAC's steps between evaluations."""
    craftax_iterations: int = 4
    """Timed PPO iterations on Craftax (after one that compiles)."""
    craftax_envs: int = 1_024
    """Environments on Craftax (the authors' 1,024)."""
    craftax_configs: tuple[str, ...] = ("authors", "preset")
    """The Craftax configurations timed (both are built either way)."""
    pixel_cap_s: float = 60.0
    """Training seconds allowed to reach the pixel target."""
    pixel_chunk: int = 16_384
    """Pixel PPO's steps between evaluations."""
    sweep_values: int = 8
    """Values per swept hyperparameter (a grid of values x values members)."""
    sweep_steps: int = 0
    """Steps per member (0: the CartPole preset's budget)."""
    pqn_task: str = "gymnax/Breakout-MinAtar"
    """PQN's task against rejax (a ``pqn:`` row of benchmarks/returns.py)."""
    pqn_steps: int = 1_048_576
    """PQN's budget per seed on that task."""
    pqn_craftax_steps: int = 1_048_576
    """PQN's budget on Craftax-Classic, one seed (0: left out)."""
    td3_tasks: tuple[str, ...] = ("brax/ant", "brax/humanoid")
    """TD3's tasks (rollax ids; rejax reaches Brax's through its own adapter)."""
    td3_steps: int = 1_048_576
    """TD3's budget per task, one seed."""
    td3_envs: int = 1_024
    """TD3's environments."""
    td3_batch: int = 32_768
    """TD3's batch per gradient step."""
    playground_tasks: tuple[str, ...] = ("CartpoleBalance", "WalkerWalk")
    """MuJoCo Playground's tasks (its DM Control Suite names) of the playground section."""
    playground_envs: tuple[int, ...] = (1_024, 8_192)
    """Batch sizes of its reset comparison."""
    playground_steps: int = 64
    """Steps per timed rollout of the reset comparison."""
    playground_also: tuple[str, ...] = ("every_step",)
    """rollax's strategies timed beside the backend's default in the reset comparison. On an
    accelerator the default for Playground is ``pool`` (its resets are physics forward passes,
    ``costly_reset``); ``every_step`` is what a cheap reset gets there."""
    playground_natural: bool = True
    """Whether the reset comparison also runs the tasks' natural episodes (1,000 steps)."""
    playground_staggered: bool = True
    """Whether the reset comparison also runs the staggered short episodes (``N / 16``
    environments ending on every step, as when episodes end at random times)."""
    playground_ppo_steps: int = 9_830_400
    """PPO's budget per seed and task, both libraries (10 of Brax's iterations with
    Playground's settings; 0: no learning)."""
    playground_seeds: int = 1
    """PPO's seeds per task and library (Brax compiles again for each)."""
    playground_batch: tuple[int, int] = (2_048, 480)
    """rollax's PPO on Playground: environments and steps per environment between updates."""
    pbt_env: str = "craftax/Craftax-Classic-Symbolic-v1"
    """The environment of the PBT section (its PPO preset)."""
    pbt_steps: int = 524_288
    """Steps per member of each PBT arm (a PBT step every quarter)."""
    compile_rows: tuple[str, ...] = ()
    """benchmarks/compile.py's rows of the compile section (empty: every row)."""
    compile_small: bool = False
    """Whether the compile section's Playground row runs a CPU's batch (else the published
    one)."""
    compile_iterations: int = 2
    """Iterations of rollax's real run in the compile section (what compiles is the same)."""
    host_env: str = "ale/Breakout-v5"
    """The host section's environment: ALE's (a 3 MB wheel; envpool's, 64 MB, does not fit
    beside the others on a lent machine), with rollax's PPO preset for it."""
    host_steps: tuple[int, int] = (128, 8)
    """The host section's PPO: steps per environment between updates and environments
    (CleanRL's settings)."""
    host_iterations: int = 10
    """Timed iterations of the host section's pipeline (after one that compiles)."""
    host_process_steps: int = 102_400
    """Steps of each whole-process run of the host section, rollax's and CleanRL's script's
    (0: none)."""


TINY = Sizes(
    step_envs=(64,),
    step_steps=20,
    # CartPole only: Breakout-MinAtar runs through the same loop, and its 14 programs took
    # 20 s of the check's 4 minutes on 2 CPU cores.
    step_tasks=(("CartPole-v1", "CartPole-v1"),),
    ppo_seeds=2,
    cartpole_total=1_000,
    cartpole_chunk=500,
    # Left out: Breakout's PPO runs through returns.py's functions, which its smoke test runs
    # on CartPole (Breakout's 2 programs took 24 s of this check).
    minatar_steps=0,
    episodes=2,
    dqn_total=1_000,
    dqn_chunk=500,
    sac_total=400,
    sac_chunk=200,
    craftax_iterations=1,
    craftax_envs=8,
    # One: each compiles Craftax's step into its own PPO program (about 30 s on 2 CPU cores)
    # through the same code; the preset on Craftax trains in tests/test_worlds.py.
    craftax_configs=("authors",),
    pixel_cap_s=1.0,
    pixel_chunk=1_024,
    sweep_values=2,
    sweep_steps=2_048,
    # CartPole and Pendulum at toy sizes run the code of the Breakout, Ant and Humanoid rows.
    # Craftax is left out: its PQN run goes through returns.ppo_run, as CartPole's does, and
    # Craftax's and Brax's steps take minutes to compile on 2 CPU cores.
    pqn_task="CartPole-v1",
    pqn_steps=2_048,
    pqn_craftax_steps=0,
    td3_tasks=("Pendulum-v1",),
    td3_steps=256,
    td3_envs=4,
    td3_batch=32,
    # CartpoleBalance's resets at one size with rollax's default strategy, and PPO against
    # Brax's with both batches shrunk (each Playground program takes seconds to compile).
    playground_tasks=("CartpoleBalance",),
    playground_envs=(8,),
    playground_steps=20,
    playground_also=(),
    # Only the short episodes: no 1,000-step episode ends in 20 steps, and each variant of
    # Playground's wrapper is a program of its own per regime.
    playground_natural=False,
    playground_staggered=False,
    playground_ppo_steps=1_024,
    playground_batch=(16, 8),
    # CartPole: the craftax section compiles Craftax's step already; this checks the arms.
    pbt_env="CartPole-v1",
    pbt_steps=0,  # 4 iterations, a PBT step after each (benchmarks/pbt.py's tiny size)
    # One row: the others go through the same worker, and each leg is a fresh process
    # (5 of them with the HLO's, about 40 s on 2 CPU cores).
    compile_rows=("ppo",),
    compile_small=True,
    compile_iterations=1,
    # Two iterations of a toy rollout: the host section's code at a size that compiles and
    # runs in seconds; no whole-process runs (benchmarks/atari.py's smoke test runs them).
    host_steps=(8, 2),
    host_iterations=2,
    host_process_steps=0,
)

CARTPOLE_TARGET = 475.0
STRATEGIES = ("every_step", "pool", "compact", "on_done")


# ---------------------------------------------------------------------------- stepping


def _steps_per_s(env: Any, actions: jax.Array, repeats: int) -> float:
    """Steps/s of ``env`` replaying ``actions`` (steps, envs) in one jitted scan."""
    return actions.size / median_seconds(rollax_rollout(env, actions), repeats)


def stepping(sizes: Sizes, repeats: int) -> dict[str, Any]:
    """Steps/s of each variant at each size, and rollax's default over gymnax."""
    import rollax
    from rollax.envs import default_reset_strategy

    out: dict[str, Any] = {}
    for env_id, gymnax_id in sizes.step_tasks:
        for n in sizes.step_envs:
            steps = sizes.step_steps
            row: dict[str, Any] = {}
            default = rollax.make(env_id, num_envs=n)
            row["default_strategy"] = default.reset_strategy
            num_actions = int(default.action_space.n)
            actions = random_actions(steps, n, num_actions)
            rate = functools.partial(_steps_per_s, actions=actions, repeats=repeats)
            row["rollax_default"] = rate(default)
            for strategy in STRATEGIES:
                if strategy == default.reset_strategy:
                    row[f"rollax_{strategy}"] = row["rollax_default"]
                    continue
                row[f"rollax_{strategy}"] = rate(rollax.make(env_id, num_envs=n,
                                                             reset_strategy=strategy))  # fmt: skip
            row["rollax_no_reset"] = rate(rollax.make(env_id, num_envs=n,
                                                      autoreset_mode="disabled"))  # fmt: skip
            row["gymnax"] = steps * n / median_seconds(gymnax_rollout(gymnax_id, n, steps), repeats)
            row["ratio_default_over_gymnax"] = row["rollax_default"] / row["gymnax"]
            best = max(STRATEGIES, key=lambda s: row[f"rollax_{s}"])
            row["fastest_strategy"] = best
            row["ratio_fastest_over_gymnax"] = row[f"rollax_{best}"] / row["gymnax"]
            assert row["default_strategy"] == default_reset_strategy(n, default.env.costly_reset)
            out[f"{env_id.split('/')[-1]}@{n}"] = row
            print(f"  {env_id} x {n:,}: default ({row['default_strategy']}) "
                  f"{row['rollax_default']:,.0f}/s, gymnax {row['gymnax']:,.0f}/s, "
                  f"ratio {row['ratio_default_over_gymnax']:.2f}; fastest {best} "
                  f"{row[f'rollax_{best}']:,.0f}/s", flush=True)  # fmt: skip
    return out


# ---------------------------------------------------------------------------- PPO


def _time_to_half(run: dict[str, Any], seeds: int) -> float | None:
    """Compile + training seconds until at least half the seeds evaluate at 475 (None: never).

    With 16 seeds the slowest seed decides "all solved", and may never get there in the
    budget; half of them is the median seed's time.
    """
    pairs = zip(run["seeds_solved_per_chunk"], run["train_s_per_chunk"], strict=True)
    for solved, train_s in pairs:
        if 2 * solved >= seeds:
            return run["compile_s"] + train_s
    return None


def ppo(sizes: Sizes, repeats: int) -> dict[str, Any]:
    """CartPole time to 475 and Breakout-MinAtar wall time, rollax against rejax."""
    import ppo_cartpole
    import returns

    out: dict[str, Any] = {"seeds": sizes.ppo_seeds}
    for name, solver in (("rejax", ppo_cartpole.rejax_solver),
                         ("rollax", ppo_cartpole.rollax_solver)):  # fmt: skip
        jax.clear_caches()
        run = solver(0, sizes.ppo_seeds, sizes.cartpole_total, sizes.cartpole_chunk,
                     sizes.episodes)  # fmt: skip
        run.pop("worst_seed_return_per_chunk")
        run["half_s_to_solve"] = _time_to_half(run, sizes.ppo_seeds)
        out[f"cartpole_{name}"] = run
        print(f"  CartPole {name}: half of {sizes.ppo_seeds} seeds at 475 after "
              f"{run['half_s_to_solve']} s, all after {run['total_s_to_solve']} s (compile "
              f"{run['compile_s']:.1f} s), {run['seeds_solved_at_end']} at the end",
              flush=True)  # fmt: skip
    r, j = out["cartpole_rollax"]["half_s_to_solve"], out["cartpole_rejax"]["half_s_to_solve"]
    out["ratio_cartpole_half_time_to_475"] = ratio(r, j)

    if not sizes.minatar_steps:
        return out
    row = next(row for row in returns.ROWS if row.name == "gymnax/Breakout-MinAtar")  # PPO
    libraries = (("rejax", returns.rejax_run), ("rollax", returns.rollax_run))
    runs = {name: run(row, sizes.minatar_steps, sizes.ppo_seeds, sizes.episodes)
            for name, run in libraries}  # fmt: skip
    _side_by_side(out, "breakout", row, runs)
    return out


# ---------------------------------------------------------------------------- off-policy


def offpolicy(sizes: Sizes, repeats: int) -> dict[str, Any]:
    """DQN on CartPole and SAC on Pendulum: time to threshold, rollax against rejax."""
    import offpolicy as bench

    out: dict[str, Any] = {}
    for algo, total, chunk in (("dqn", sizes.dqn_total, sizes.dqn_chunk),
                               ("sac", sizes.sac_total, sizes.sac_chunk)):  # fmt: skip
        bench.TASKS[algo]["total"] = total
        for name, solver in (("rejax", bench.rejax_solver), ("rollax", bench.rollax_solver)):
            jax.clear_caches()
            run = solver(algo, 0, chunk, sizes.episodes)
            out[f"{algo}_{name}"] = {k: v for k, v in run.items() if not isinstance(v, list)}
            print(f"  {algo.upper()} {name}: threshold after {run['total_s_to_threshold']} s "
                  f"(compile {run['compile_s']:.1f} s)", flush=True)  # fmt: skip
        r = out[f"{algo}_rollax"]["total_s_to_threshold"]
        j = out[f"{algo}_rejax"]["total_s_to_threshold"]
        out[f"ratio_{algo}_time_to_threshold"] = ratio(r, j)
    return out


# ---------------------------------------------------------------------------- Craftax


def craftax(sizes: Sizes, repeats: int) -> dict[str, Any]:
    """PPO steps/s on Craftax-Classic: the authors' settings and rollax's preset."""
    import returns
    from rollax.agents.ppo import PRESETS, PPOConfig, make_ppo

    out: dict[str, Any] = {}
    configs = {
        "authors": PPOConfig(**returns.CRAFTAX_AUTHORS),
        "preset": PRESETS[returns.CRAFTAX],
    }
    for name, config in configs.items():
        config = config.replace(num_envs=min(config.num_envs, sizes.craftax_envs))
        if name not in sizes.craftax_configs:
            continue
        iteration = config.batch_size
        config = config.replace(total_steps=iteration * (sizes.craftax_iterations + 1))
        jax.clear_caches()
        with Timed() as compile_t:
            agent = make_ppo(config, returns.CRAFTAX)
            agent.warmup()
            state = jax.block_until_ready(agent.init(jax.random.key(0)))
            state = jax.block_until_ready(agent.run(state, iteration)[0])
        steps = iteration * sizes.craftax_iterations
        with Timed() as t:
            jax.block_until_ready(agent.run(state, steps))
        out[name] = {
            "num_envs": config.num_envs,
            "num_steps": config.num_steps,
            "compile_and_first_iteration_s": compile_t.seconds,
            "steps_per_s": steps / t.seconds,
        }
        print(f"  Craftax-Classic PPO ({name}): {out[name]['steps_per_s']:,.0f} steps/s, "
              f"compile {compile_t.seconds:.1f} s", flush=True)  # fmt: skip
    return out


# ---------------------------------------------------------------------------- PQN and TD3

FASTTD3 = dict(
    buffer_size=1_048_576, gradient_steps=2, learning_rate=3e-4, optimizer="adamw",
    weight_decay=0.1, max_grad_norm=0.0, tau=0.1, gamma=0.99, exploration_noise=0.2,
    policy_noise=0.001, noise_clip=0.5, num_atoms=101, hidden_sizes=(512, 256, 128),
    activation="relu", normalize_obs=True,
)  # fmt: skip
"""FastTD3's defaults (its ``hyperparams.py``), in rollax's names: 2 gradient steps per
vectorized step, lr 3e-4 with AdamW (weight decay 0.1) and no norm bound, tau 0.1, target
smoothing noise 0.001, a C51 critic of 101 atoms, observations normalized, 1-step returns
and no layer normalization in the critic (FastTD3's defaults; it turns n-step returns on for
some tasks). Where rollax's TD3 differs: one exploration noise (0.2) instead of one drawn per
environment from [0.001, 0.4], one network shape for actor and critic (FastTD3's actor's
512, 256, 128; its critic is twice as wide), and a replay of 1M transitions in all instead
of 51,200 per environment. The support is the task's (``TD3_SUPPORT``); the environments,
batch and budget are ``Sizes``'."""

TD3_SUPPORT = {"brax/ant": (-500.0, 500.0), "brax/humanoid": (-1_000.0, 1_000.0)}
"""The C51 critic's support per task, wide enough for its discounted returns at gamma 0.99:
the healthy reward alone is 1 a step on Ant and 5 on Humanoid (values near 100 and 500,
before the reward for speed). Other tasks take FastTD3's default, [-250, 250]."""


def fasttd3(sizes: Sizes, task: str) -> Any:
    """TD3's configuration in FastTD3's manner on ``task`` at ``sizes``: learning starts after
    10 vectorized steps, as FastTD3's does."""
    from rollax.agents.td3 import TD3Config

    envs = sizes.td3_envs
    v_min, v_max = TD3_SUPPORT.get(task, (-250.0, 250.0))
    return TD3Config(
        **{**FASTTD3, "buffer_size": min(FASTTD3["buffer_size"], sizes.td3_steps)},
        num_envs=envs, batch_size=sizes.td3_batch, learning_starts=10 * envs,
        total_steps=sizes.td3_steps, v_min=v_min, v_max=v_max,
    )  # fmt: skip


def rejax_td3(config: Any) -> dict[str, Any]:
    """rejax's TD3 settings closest to rollax's ``config``.

    What rejax cannot take stays its own: 64 x 64 networks, a scalar critic, Adam without
    weight decay, noise in absolute units (rollax's is in half ranges: the same on Brax's
    [-1, 1] boxes). Two settings are converted so that both do the same per environment
    step: rejax moves its targets once per ``policy_delay`` vectorized steps, where rollax
    moves them with every actor step (``gradient_steps`` times as often), so rejax's polyak
    is ``(1 - tau) ** gradient_steps``; and rejax samples a batch without replacement, so it
    waits until the buffer holds a batch before learning.
    """
    return dict(
        actor_kwargs={"activation": config.activation},
        critic_kwargs={"activation": config.activation},
        num_envs=config.num_envs, buffer_size=config.buffer_size,
        fill_buffer=max(config.learning_starts, config.batch_size),
        batch_size=config.batch_size, learning_rate=config.learning_rate,
        num_epochs=config.gradient_steps, gamma=config.gamma,
        polyak=(1.0 - config.tau) ** config.gradient_steps,
        exploration_noise=config.exploration_noise, target_noise=config.policy_noise,
        target_noise_clip=config.noise_clip, policy_delay=config.policy_delay,
        normalize_observations=config.normalize_obs,
    )  # fmt: skip


@contextlib.contextmanager
def _failure_kept(out: dict[str, Any], key: str) -> Iterator[None]:
    """Runs the block; should it raise, prints the traceback, says what failed in
    ``out[f"{key}_error"]`` and goes on: one figure's failure (memory, a missing package)
    leaves the others."""
    try:
        yield
    except Exception as e:
        traceback.print_exc()
        out[f"{key}_error"] = f"{type(e).__name__}: {e}"


def _side_by_side(out: dict[str, Any], key: str, row: Any, runs: dict[str, Any]) -> None:
    """Put rollax's and its peer's figures on ``row`` (``runs``: ``{"<peer>": report,
    "rollax": report}``, each a ``returns.runs_report``) into ``out`` under
    ``<key>_<library>``, with each one's mean return and steps/s (over the wall time, compile
    included) and the ratio of their wall times (rollax / peer), and print them."""
    for name, run in runs.items():
        run["mean_return"] = float(np.mean(run["returns"]))
        run["steps_per_s"] = run["steps"] * len(run["returns"]) / run["wall_s"]
        out[f"{key}_{name}"] = run
        compile_s = "-" if run["compile_s"] is None else f"{run['compile_s']:.1f} s"
        print(f"  {row.name} {name}: {run['wall_s']:.1f} s for {run['steps']:,} steps x "
              f"{len(run['returns'])} seeds (compile {compile_s}), mean return "
              f"{run['mean_return']:.1f}", flush=True)  # fmt: skip
    peer = next(name for name in runs if name != "rollax")
    out[f"ratio_{key}_wall"] = out[f"{key}_rollax"]["wall_s"] / out[f"{key}_{peer}"]["wall_s"]


def agents(sizes: Sizes, repeats: int) -> dict[str, Any]:
    """PQN on MinAtar against rejax and on Craftax-Classic; TD3 in FastTD3's manner on Brax's
    heavy tasks against rejax."""
    import returns
    from rollax.agents.pqn import PRESETS

    out: dict[str, Any] = {}
    row = next(row for row in returns.ROWS if row.name == f"pqn:{sizes.pqn_task}")
    libraries = (("rejax", returns.rejax_run), ("rollax", returns.rollax_run))
    runs = {name: run(row, sizes.pqn_steps, sizes.ppo_seeds, sizes.episodes)
            for name, run in libraries}  # fmt: skip
    _side_by_side(out, "pqn", row, runs)

    if sizes.pqn_craftax_steps:
        preset, steps = PRESETS[returns.CRAFTAX], sizes.pqn_craftax_steps
        run = returns.ppo_run(preset, returns.CRAFTAX, steps, 1, sizes.episodes, "pqn")
        run["steps_per_s_after_compile"] = run["steps"] / (run["wall_s"] - run["compile_s"])
        out["pqn_craftax"] = run
        print(f"  PQN on Craftax-Classic: {run['steps_per_s_after_compile']:,.0f} steps/s "
              f"after compiling ({run['compile_s']:.1f} s), return {run['returns'][0]:.2f}",
              flush=True)  # fmt: skip

    for task in sizes.td3_tasks:
        key, config = f"td3_{task.split('/')[-1]}", fasttd3(sizes, task)
        row = returns.Row(task, "rejax", task, rejax_td3(config), sizes.td3_steps, algo="td3")
        with _failure_kept(out, key):
            runs = {
                "rejax": returns.rejax_run(row, sizes.td3_steps, 1, sizes.episodes),
                "rollax": returns.ppo_run(config, task, sizes.td3_steps, 1, sizes.episodes, "td3"),
            }
            _side_by_side(out, key, row, runs)
    return out


# ---------------------------------------------------------------------------- Playground

PLAYGROUND_LIMIT = 16
"""The short-episode regime of the reset comparison: every episode cut at 16 steps."""


def playground_ppo(sizes: Sizes, task: str) -> Any:
    """rollax's PPO on a Playground task at a GPU's scale: the task's preset, at Playground's
    published Brax PPO batch (``dm_control_suite_params.brax_ppo_config``: 2,048
    environments, 16 unrolls of 30 steps between updates, 16 epochs of 32 minibatches,
    983,040 steps an iteration). The heavy tasks' presets (WalkerWalk, CheetahRun) are that
    batch already; CartpoleBalance's CPU preset takes it here. rollax estimates advantages
    over each environment's 480 steps, where Brax cuts them into unrolls of 30. The
    environments and steps are ``Sizes``'."""
    from rollax.agents.ppo import PRESETS

    gpu = PRESETS["playground/WalkerWalk"]  # Playground's published batch
    envs, steps = sizes.playground_batch
    return PRESETS.get(f"playground/{task}", gpu).replace(
        num_envs=envs, num_steps=steps, num_epochs=gpu.num_epochs,
        num_minibatches=gpu.num_minibatches,
    )  # fmt: skip


def playground(sizes: Sizes, repeats: int) -> dict[str, Any]:
    """MuJoCo Playground: rollax's reset strategies (the default, ``pool`` on an accelerator,
    and ``every_step``) against Playground's cached reset and its ``full_reset=True``
    (``benchmarks/worlds.py``'s rows), and rollax's PPO against
    Brax's PPO with Playground's published settings (``benchmarks/returns.py``'s peer)."""
    import returns
    import worlds

    out: dict[str, Any] = {}
    for task in sizes.playground_tasks:
        for n in sizes.playground_envs:
            with _failure_kept(out, f"{task}@{n}"):
                row = worlds.measure(
                    "playground", f"playground/{task}", n, steps=sizes.playground_steps,
                    repeats=repeats, limit=PLAYGROUND_LIMIT, strategies=None,
                    also=sizes.playground_also,
                    natural=sizes.playground_natural, staggered=sizes.playground_staggered,
                )  # fmt: skip
                out[f"{task}@{n}"] = {**row, **worlds.ratios(row)}

    if not sizes.playground_ppo_steps:
        return out
    steps = sizes.playground_ppo_steps
    for task in sizes.playground_tasks:
        config = playground_ppo(sizes, task)
        row = returns.Row(f"playground/{task}", "playground", task, {}, steps)
        seeds, episodes = sizes.playground_seeds, sizes.episodes
        with _failure_kept(out, f"ppo_{task}"):
            runs = {
                "brax": returns.playground_run(row, steps, seeds, episodes),
                "rollax": returns.ppo_run(config, row.task, steps, seeds, episodes),
            }
            _side_by_side(out, f"ppo_{task}", row, runs)
    return out


# ---------------------------------------------------------------------------- pixels


def pixels(sizes: Sizes, repeats: int) -> dict[str, Any]:
    """PPO from pixels to 400 on PixelCartPole-v1: compile included."""
    import pixels as bench

    jax.clear_caches()
    run = bench.pixel_cartpole_time_to(
        augment=False, cap_s=sizes.pixel_cap_s, chunk=sizes.pixel_chunk,
        episodes=sizes.episodes, seed=0,
    )  # fmt: skip
    run["target"] = bench.PIXEL_TARGET
    return run


# ---------------------------------------------------------------------------- sweep


def sweep(sizes: Sizes, repeats: int) -> dict[str, Any]:
    """A values x values PPO sweep in one program against rejax over as many keys."""
    import ppo_cartpole
    from rollax.agents.ppo import PRESETS, make_ppo

    k = sizes.sweep_values
    lrs = ",".join(f"{lr:.2e}" for lr in np.geomspace(5e-4, 1e-2, k))
    ents = ",".join(f"{e:.3g}" for e in np.linspace(0.0, 0.02, k))
    preset = PRESETS["CartPole-v1"]
    steps = sizes.sweep_steps or preset.total_steps
    steps = max(steps // preset.batch_size, 1) * preset.batch_size
    config = preset.replace(total_steps=steps, sweep=(f"learning_rate={lrs}", f"ent_coef={ents}"))
    jax.clear_caches()
    with Timed() as t:
        agent = make_ppo(config, "CartPole-v1")
        state = agent.init(jax.random.key(0))
        state, _ = agent.run(state, steps)
        jax.block_until_ready(state)
    members = k * k
    returns = np.asarray(agent.evaluate(state, jax.random.key(1), sizes.episodes, False))
    out: dict[str, Any] = {
        "members": members,
        "steps_per_member": steps,
        "rollax_wall_s": t.seconds,
        "rollax_member_steps_per_s": members * steps / t.seconds,
        "rollax_members_at_475": int((returns.mean(axis=-1) >= CARTPOLE_TARGET).sum()),
    }

    algo = ppo_cartpole.rejax_ppo(steps)
    jax.clear_caches()
    _, out["rejax_wall_s"], _ = rejax_train_seeds(algo, members)
    out["rejax_member_steps_per_s"] = members * steps / out["rejax_wall_s"]
    out["ratio_wall"] = out["rollax_wall_s"] / out["rejax_wall_s"]
    print(f"  {members}-member sweep: rollax {out['rollax_wall_s']:.1f} s "
          f"({out['rollax_members_at_475']} members at 475), rejax x {members} keys "
          f"{out['rejax_wall_s']:.1f} s", flush=True)  # fmt: skip
    return out


# ---------------------------------------------------------------------------- PBT


def pbt(sizes: Sizes, repeats: int) -> dict[str, Any]:
    """benchmarks/pbt.py's grid and PBT arms on one environment, one repeat each."""
    import tempfile
    from pathlib import Path

    import pbt as bench
    from rollax.agents.ppo import PRESETS

    config = PRESETS[sizes.pbt_env]
    if sizes.pbt_steps:
        config = config.replace(total_steps=sizes.pbt_steps)
        interval = sizes.pbt_steps // 4
    else:
        config = config.replace(total_steps=4 * config.batch_size)
        interval = config.batch_size
    task = bench.Task(env=sizes.pbt_env, config=config, interval=interval)
    out: dict[str, Any] = {"env": sizes.pbt_env, "steps_per_member": config.total_steps}
    with tempfile.TemporaryDirectory(prefix="rollax-gpu-pbt-") as tmp:
        for arm in ("grid", "pbt"):
            jax.clear_caches()
            out[arm] = bench.run_arm(task, arm == "pbt", 0, sizes.episodes, Path(tmp))
            print(f"  {arm}: member {out[arm]['chosen']} returns {out[arm]['return']:.2f} "
                  f"({out[arm]['seconds']:.1f} s)", flush=True)  # fmt: skip
    out["ratio_wall"] = out["pbt"]["seconds"] / out["grid"]["seconds"]
    return out


# ---------------------------------------------------------------------------- compile


def compile_costs(sizes: Sizes, repeats: int) -> dict[str, Any]:
    """benchmarks/compile.py's rows, each leg in ``repeats`` fresh processes of this device
    (and one more for each side's HLO): cold-start compile seconds, programs compiled and
    optimized HLO sizes, rollax beside its peer."""
    import compile as bench

    rows = list(sizes.compile_rows or bench.ROW_NAMES)
    return bench.measure(rows, repeats, hlo=True, small=sizes.compile_small,
                         iterations=sizes.compile_iterations, episodes=sizes.episodes)  # fmt: skip


def host(sizes: Sizes, repeats: int) -> dict[str, Any]:
    """PPO on Breakout-v5 stepped on the host (``host_env``), the learner on this device.

    In this process: steps/s of the synchronous loop and of the overlapped one
    (``acting_lag=1``, acting on the CPU beside an accelerator's learner, or on a second
    CPU device), and the pipeline's parts measured alone for the same iterations: the
    environments stepped with random actions, the rollouts (acting too), and the learner's
    updates on one batch. The
    overlapped wall time over the larger part is the pipeline's overhead (goal: at most
    1.15). Then, where ``CLEANRL_SCRIPT`` names CleanRL's ``ppo_atari_envpool_xla_jax_scan.py``,
    ``benchmarks/atari.py``'s whole-process runs of both for ``host_process_steps``.
    """
    import os
    from pathlib import Path

    import atari
    from rollax.agents.ppo import PRESETS, make_ppo

    env = sizes.host_env
    num_steps, num_envs = sizes.host_steps
    config = PRESETS[env].replace(num_steps=num_steps, num_envs=num_envs)
    beside = (
        "cpu:0" if jax.default_backend() != "cpu" else ("1" if jax.device_count() > 1 else None)
    )
    settings = {"sync": {}, "overlapped": {"acting_lag": 1, "actor_device": beside}}
    iterations, out = sizes.host_iterations, {"actor_device": beside}
    for name, options in settings.items():
        agent = make_ppo(config.replace(**options), env)
        agent.warmup()
        state = agent.init(jax.random.key(0))
        state, _ = agent.run(state, agent.steps_per_iteration)  # first use of every program
        walls = []
        for _ in range(repeats):
            start = time.perf_counter()
            state, _ = agent.run(state, iterations * agent.steps_per_iteration)
            jax.block_until_ready(state)
            walls.append(time.perf_counter() - start)
        out[f"{name}_wall_s"] = float(np.median(walls))
        out[f"{name}_steps_per_s"] = (
            iterations * agent.steps_per_iteration / float(np.median(walls))
        )
    # The parts alone, on the last agent (the overlapped one): its environments and learner.
    loop, iteration = agent.run.func.__self__, agent.run.args[0]
    envs = agent.env.host
    actions = np.random.default_rng(0).integers(0, envs.action_space.n, (envs.num_envs,))
    start = time.perf_counter()
    for _ in range(iterations * num_steps):
        envs.step(actions)
    out["environments_alone_s"] = time.perf_counter() - start
    acting = iteration.acting_state(state)
    start = time.perf_counter()
    for _ in range(iterations):  # acting and the environments: the rollout without learning
        end, batch = iteration.rollout(loop._to_actor(acting))
    jax.block_until_ready((end, batch))
    out["rollout_alone_s"] = time.perf_counter() - start
    end, batch = loop._to_learner((end, batch))
    learner, totals = state.replace(**iteration.advanced(end)), loop.zero_totals()
    learner, totals = iteration.update(learner, acting, batch, totals)
    jax.block_until_ready(learner)
    start = time.perf_counter()
    for _ in range(iterations):
        learner, totals = iteration.update(learner, acting, batch, totals)
    jax.block_until_ready(learner)
    out["learner_alone_s"] = time.perf_counter() - start
    larger = max(out["environments_alone_s"], out["learner_alone_s"])
    out["overlapped_over_larger_part"] = out["overlapped_wall_s"] / larger
    out["sync_over_larger_part"] = out["sync_wall_s"] / larger
    script = os.environ.get("CLEANRL_SCRIPT")
    if sizes.host_process_steps and script and importlib.util.find_spec("envpool"):
        import tempfile

        steps = str(sizes.host_process_steps)
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            peer = atari.patched_peer(Path(script), work)
            rollax = atari.rollax_command(steps)
            apart = ["--acting-lag", "1", "--actor-device", beside or "1"]  # a core on a CPU
            runs = {
                "cleanrl": [sys.executable, str(peer), "--total-timesteps", steps],
                "rollax_sync": [*rollax, "--run-dir", str(work / "a")],
                "rollax_overlapped": [*rollax, *apart, "--run-dir", str(work / "b")],
            }
            for name, command in runs.items():
                out[f"process_{name}_steps_per_s"] = int(steps) / atari.timed(command, work)
        for name in ("rollax_sync", "rollax_overlapped"):
            out[f"ratio_{name}_over_cleanrl"] = ratio(
                out[f"process_{name}_steps_per_s"], out["process_cleanrl_steps_per_s"]
            )
    return out


# ---------------------------------------------------------------------------- main

SECTIONS: dict[str, Callable[[Sizes, int], dict[str, Any]]] = {
    "stepping": stepping,
    "ppo": ppo,
    "offpolicy": offpolicy,
    "craftax": craftax,
    "pixels": pixels,
    "sweep": sweep,
    "agents": agents,
    "playground": playground,
    "pbt": pbt,
    "compile": compile_costs,
    "host": host,
}


def versions() -> dict[str, str | None]:
    """The versions of JAX and of every library measured."""
    out: dict[str, str | None] = {"python": sys.version.split()[0]}
    for name in ("rollax", "jax", "jaxlib", "jax-cuda12-plugin", "jax-cuda13-plugin", "flax",
                 "optax", "gymnax", "rejax", "craftax", "brax", "mujoco", "mujoco-mjx",
                 "playground"):  # fmt: skip
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def main() -> None:
    parser = Parser(__doc__).choice("--only", SECTIONS)
    parser.tiny(help="toy sizes: a check on the CPU").repeats(3)
    args = parser.parse_args()
    sizes = TINY if args.tiny else Sizes()
    device = jax.devices()[0]
    report: dict[str, Any] = {
        "device": device.device_kind,
        "backend": jax.default_backend(),
        "device_count": jax.device_count(),
        "versions": versions(),
        "tiny": args.tiny,
    }
    banner()
    start = time.perf_counter()
    for name in args.only:
        print(f"[{name}]", flush=True)
        section_start = time.perf_counter()
        try:
            result = SECTIONS[name](sizes, args.repeats)
        except Exception as e:  # one section's failure leaves the others' figures
            traceback.print_exc()
            result = {"error": f"{type(e).__name__}: {e}"}
        result["section_s"] = time.perf_counter() - section_start
        report[name] = result
        emit({"section": name, **result})
    report["total_s"] = time.perf_counter() - start
    emit(report)


if __name__ == "__main__":
    main()
