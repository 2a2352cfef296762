"""Learning quality: final returns over many seeds, rollax's presets against the peer.

One row per task rollax ships a PPO preset for, and one per task of its PQN and TD3 presets
and of SAC's Playground presets (``pqn:CartPole-v1``, ``td3:Pendulum-v1``,
``sac:playground/CartpoleBalance``), each run side by side with its peer on the same
budget and ``--seeds`` seeds (10 by default; each library compiles afresh for every row:
``jax.clear_caches()``, but Brax's SAC trains once for a task's SAC and TD3 rows named
together):

==============================  ===================  ==============================================
task                            budget               peer
==============================  ===================  ==============================================
gymnax/<game>-MinAtar (4 games) 1,048,576 steps      rejax 0.1.3 with the gymnax authors' MinAtar
                                                     settings (gymnax-blines ``ppo.yaml``)
brax/inverted_pendulum          1,048,576 steps      Brax's own PPO with its published settings
CartPole-v1, Acrobot-v1,        the preset's budget  rejax 0.1.3 with its own
Pendulum-v1,                                         ``configs/gymnax/<task>.yaml`` PPO settings
MountainCarContinuous-v0
craftax/Craftax-Classic-        1,048,576 steps      the Craftax authors' published PPO settings
Symbolic-v1                                          (Craftax_Baselines), run by rollax's PPO
jumanji/Snake-v1,               the preset's budget  a uniform random policy: no PPO on PyPI
xminigrid/MiniGrid-DoorKey-5x5                       trains on these suites (Jumanji's own A2C
                                                     needs dm-haiku and rlax)
playground/CartpoleSwingup,     the preset's budget  a uniform random policy: Brax's PPO with
playground/PendulumSwingup,                          Playground's settings (the peer of
playground/AcrobotSwingup                            CartpoleBalance's row) needs a GPU
pqn:CartPole-v1                 the preset's budget  rejax 0.1.3's PQN with its own
                                                     ``configs/gymnax/cartpole.yaml`` settings
pqn:gymnax/<game>-MinAtar       1,048,576 steps      rejax 0.1.3's PQN with purejaxql's MinAtar
                                                     settings (``pqn_minatar.yaml``)
td3:Pendulum-v1,                the preset's budget  rejax 0.1.3's TD3 with its own
td3:MountainCarContinuous-v0                         ``configs/gymnax/<task>.yaml`` settings
td3:brax/inverted_pendulum      the preset's budget  rejax 0.1.3's TD3 with rollax's preset (rejax
                                                     ships none), on rejax's Brax adapter
playground/CartpoleBalance,     the preset's budget  Brax's PPO (SAC) as MuJoCo Playground trains
sac:playground/CartpoleBalance,                      it: Playground's published settings, its
td3:playground/CartpoleBalance,                      Brax wrapper; counts where its IQM reaches
sac:playground/ReacherEasy,                          900 (800 on ReacherEasy; TD3's peer is
td3:playground/ReacherEasy                           Brax's SAC)
fresh-vs-cached:playground/     the preset's budget  rollax's same preset with the cached reset
CartpoleBalance, ReacherEasy                         (Playground's wrapper): does freshness pay?
==============================  ===================  ==============================================

How the seeds run: rollax trains all of a row's seeds in one program (``num_seeds``); rejax
maps its jitted ``train`` over the seeds' keys (``jax.vmap``); Brax's PPO and SAC, Python
loops around their jitted steps, run seed after seed.

Figures per row:

- **final returns**, one per seed: the mean return of ``--episodes`` (64) episodes of the
  final policy with sampled actions (greedy for rollax's PQN: ``GREEDY_EVALUATION``), each
  library with its own evaluator (rollax ``agent.evaluate``, rejax ``rejax.evaluate``
  mapped over the seeds, Brax's ``Evaluator`` with ``deterministic_eval=False``).
- **interval estimates** (rliable 1.2.0, each a run of one task, ``--reps`` stratified
  bootstrap resamples, 95% percentile intervals): the interquartile mean (IQM) of each
  library's seeds, the difference of the two, and the probability that a rollax seed beats a
  peer seed (ties count half). The **verdict** is "above" where the interval of the
  probability lies above 0.5 or that of the difference above 0 (and neither below), "below"
  the other way round, "tied" otherwise. ``--from FILE`` computes them again from a saved
  report's runs.
- **seeds above the threshold**, on rows whose runs split into learned and stuck (Breakout:
  above 15, off the plateau near 7; PendulumSwingup: above 100, a pendulum swung up).
- **wall time per seed**: compile and training of every seed (rollax: ``make_ppo``,
  ``warmup``, ``init``, ``run``; rejax: its mapped ``train``; Brax: each ``ppo.train`` or
  ``sac.train`` less its final evaluation) divided by the seeds. rollax and rejax compile
  once for all the seeds, Brax once per seed (its price for running seeds one after the
  other). Evaluation is not timed.
- **achievements** (Craftax): the mean number of Craftax's 22 achievements an episode of the
  final policy unlocked, per seed, and how often each was unlocked.

rollax trains on its own environments where it has them (``CartPole-v1``...: the dynamics of
Gymnasium's, tested for parity), on gymnax's and Brax's through its adapters otherwise; the
peers on gymnax's and Brax's own.

rejax 0.1.3 expects gymnax's old 5-value ``step``: its environment is adapted (done =
terminated or truncated). Brax's PPO calls ``jax.device_put_replicated``, which jax 0.10
removed: a shim stacks the value and puts it on the devices with a ``NamedSharding``.

The last line printed is one JSON object with every figure.

By default the rows whose peer is another library run (MinAtar, Brax, the classic tasks);
the suites' rows run when ``--tasks`` names them (Craftax's takes about 90 minutes at 10
seeds on 2 CPU cores, most of it the authors' settings), and so do Playground's (the
``playground`` extra). Playground's published PPO settings are a GPU's: 2,048 environments
and 16 epochs of 32 minibatches of 1,024, 983,040 steps an iteration. On 2 CPU cores one
seed of them did not finish its first 2M steps in 14 minutes, so that row is for a GPU; a
``--budget`` under 20,480 shrinks its batch for a quick check, as for Brax's row. Its SAC
settings (128 environments, 8 gradient steps of 512 a step, 8,192 random steps first, 5M
steps) run here at the SAC preset's 262,144 steps; a ``--budget`` under 81,920 shrinks them.

Usage:
    python benchmarks/returns.py [--tasks TASK ...] [--seeds 10] [--episodes 64] [--reps 5000]
        [--budget STEPS]  # override every row's budget (a quick check, not the table)
"""

from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from _common import Timed
from _harness import Parser, banner, cpu_name, emit, interval_estimates, verdict
from _peers import (
    BraxRuns,
    brax_train,
    rejax_agent,
    rejax_evaluate_seeds,
    rejax_train_seeds,
)

MINATAR_BUDGET = 1_048_576

# gymnax-blines' PPO settings for MinAtar (configs/<game>/ppo.yaml), in rejax's names.
REJAX_MINATAR = dict(
    agent_kwargs={"hidden_layer_sizes": (256, 256), "activation": "relu"},
    num_envs=64,
    num_steps=128,
    num_epochs=4,
    num_minibatches=8,
    learning_rate=5e-4,
    max_grad_norm=0.5,
    gamma=0.999,
    gae_lambda=0.95,
    clip_eps=0.2,
    ent_coef=0.01,
    vf_coef=0.5,
)

# rejax's own PPO settings, configs/gymnax/<task>.yaml (total_timesteps and eval_freq
# aside: the budget is the preset's, and evaluation is not timed).
REJAX_CLASSIC = {
    "CartPole-v1": dict(
        agent_kwargs={"activation": "tanh"}, num_envs=5, num_steps=100, num_epochs=5,
        num_minibatches=5, learning_rate=0.00075, max_grad_norm=0.5, gamma=0.99,
        gae_lambda=0.95, clip_eps=0.2, ent_coef=0.01, vf_coef=0.5,
    ),
    "Acrobot-v1": dict(
        agent_kwargs={"activation": "tanh"}, num_envs=5, num_steps=100, num_epochs=5,
        num_minibatches=5, learning_rate=0.00075, max_grad_norm=0.5, gamma=0.99,
        gae_lambda=0.95, clip_eps=0.2, ent_coef=0.01, vf_coef=0.5, normalize_observations=True,
    ),
    "Pendulum-v1": dict(
        agent_kwargs={"activation": "swish"}, num_envs=100, num_steps=100, num_epochs=10,
        num_minibatches=10, learning_rate=0.001, max_grad_norm=10, gamma=0.995,
        gae_lambda=0.95, clip_eps=0.2, ent_coef=0.0, vf_coef=0.5, normalize_observations=True,
    ),
    "MountainCarContinuous-v0": dict(
        agent_kwargs={"activation": "relu"}, num_envs=5, num_steps=100, num_epochs=10,
        num_minibatches=10, learning_rate=0.0003, max_grad_norm=10, gamma=0.9,
        gae_lambda=0.95, clip_eps=0.2, ent_coef=0.0, vf_coef=0.5,
    ),
}  # fmt: skip

# rejax's own PQN settings, configs/gymnax/<task>.yaml (total_timesteps and eval_freq
# aside), and for MinAtar (rejax ships none) purejaxql's published ones
# (purejaxql/config/alg/pqn_minatar.yaml: 128 x 32, 2 epochs of 32 minibatches, lr 5e-4,
# epsilon to 0.05 over a tenth, lambda 0.65) on rejax's own Q-network (an MLP with layer
# normalization; purejaxql's is a CNN, and anneals the learning rate with RAdam).
PQN_MINATAR = dict(
    num_envs=128,
    num_steps=32,
    num_minibatches=32,
    num_epochs=2,
    learning_rate=5e-4,
    max_grad_norm=10,
    eps_start=1.0,
    eps_end=0.05,
    exploration_fraction=0.1,
    gamma=0.99,
    td_lambda=0.65,
    normalize_observations=False,
)
# rejax's own TD3 settings, configs/gymnax/<task>.yaml (total_timesteps and eval_freq
# aside; Pendulum's are also rollax's preset), and for Brax's inverted_pendulum (rejax ships
# none) rollax's preset in rejax's names, on rejax's own Brax adapter (rejax.compat); rejax's
# TD3 fixes its networks at 64 x 64, as the preset's are. rejax moves its targets once per
# policy_delay vectorized steps, rollax with each of its actor's steps (num_epochs times as
# often): polyak 0.995 ** 8 is the preset's tau of 0.005 per environment step.
REJAX_TD3 = {
    "Pendulum-v1": dict(
        actor_kwargs={"activation": "swish"}, critic_kwargs={"activation": "swish"},
        num_envs=1, buffer_size=10_000, fill_buffer=1_000, batch_size=100, learning_rate=1e-3,
        num_epochs=1, gamma=0.99, polyak=0.95, max_grad_norm=100, exploration_noise=0.3,
        target_noise=0.2, target_noise_clip=0.5, policy_delay=2, normalize_observations=True,
    ),
    "MountainCarContinuous-v0": dict(
        actor_kwargs={"activation": "relu"}, critic_kwargs={"activation": "relu"},
        buffer_size=10_000, fill_buffer=1_000, batch_size=100, learning_rate=2e-3, gamma=0.98,
        polyak=0.995, max_grad_norm=10, exploration_noise=0.2, target_noise=0.2,
        target_noise_clip=0.5, policy_delay=2,
    ),
    "brax/inverted_pendulum": dict(
        actor_kwargs={"activation": "relu"}, critic_kwargs={"activation": "relu"}, num_envs=16,
        buffer_size=98_304, fill_buffer=4_096, batch_size=256, learning_rate=3e-4,
        num_epochs=8, gamma=0.99, polyak=0.995**8, max_grad_norm=100, exploration_noise=0.1,
        target_noise=0.2, target_noise_clip=0.5, policy_delay=2, normalize_observations=True,
    ),
}  # fmt: skip
REJAX_PQN = {
    "CartPole-v1": dict(
        num_envs=16, num_steps=128, num_minibatches=16, max_grad_norm=10, learning_rate=3e-4,
        num_epochs=5, eps_start=1.0, eps_end=0.05, exploration_fraction=0.5, gamma=0.99,
        td_lambda=0.9, normalize_observations=False,
    ),
}  # fmt: skip

# Brax's published PPO settings for inverted_pendulum (its training notebook).
BRAX_INVERTED_PENDULUM = dict(
    num_envs=2048,
    batch_size=1024,
    unroll_length=5,
    num_minibatches=32,
    num_updates_per_batch=4,
    discounting=0.97,
    learning_rate=3e-4,
    entropy_cost=1e-2,
    reward_scaling=10,
    normalize_observations=True,
    episode_length=1000,
    action_repeat=1,
)


# The Craftax authors' PPO for Craftax-Classic (Craftax_Baselines ``ppo.py`` and its
# actor-critic: 1,024 environments x 64 steps, 4 epochs of 8 minibatches, lr 2e-4 annealed,
# gamma 0.99, GAE lambda 0.8, clipped value loss, max grad norm 1.0, separate actor and
# critic MLPs of 3 x 512 tanh), in rollax's PPOConfig names: rollax's PPO runs them.
CRAFTAX_AUTHORS = dict(
    num_envs=1024,
    num_steps=64,
    num_epochs=4,
    num_minibatches=8,
    learning_rate=2e-4,
    lr_schedule="linear",
    gamma=0.99,
    gae_lambda=0.8,
    clip_eps=0.2,
    clip_value=True,
    ent_coef=0.01,
    vf_coef=0.5,
    max_grad_norm=1.0,
    hidden_sizes=(512, 512, 512),
    activation="tanh",
)
CRAFTAX_BUDGET = 1_048_576
CRAFTAX = "craftax/Craftax-Classic-Symbolic-v1"


PLAYGROUND_CARTPOLE = "playground/CartpoleBalance"
PLAYGROUND_REACHER = "playground/ReacherEasy"


@dataclasses.dataclass(frozen=True)
class Row:
    """One task of the table."""

    task: str
    """rollax's id (and the preset's key)."""
    peer: str
    """``"rejax"``, ``"brax"``, ``"playground"`` (Brax's PPO or SAC as MuJoCo Playground
    trains the task: ``BRAX_LEARNERS``), ``"authors"`` (the suite authors' PPO settings, run
    by rollax's PPO),
    ``"random"`` (a uniform random policy, where no peer trains on the suite: the floor
    learning must clear) or ``"cached"`` (rollax's own preset with the environment options
    of ``peer_settings``: the fresh-versus-cached comparison)."""
    peer_env: str
    """The peer's id of the same task (gymnax's or Brax's; rollax's for the others)."""
    peer_settings: dict
    """The peer's hyperparameters."""
    budget: int | None = None
    """Environment steps per seed (``None``: the preset's ``total_steps``)."""
    threshold: float | None = None
    """A return that tells a run which learned the task from one stuck short of it, where
    runs split that way (``None``: no such split)."""
    algo: str = "ppo"
    """rollax's agent, and the peer's (``"ppo"``, ``"pqn"``, ``"sac"`` or ``"td3"``)."""
    comparable_at: float | None = None
    """The IQM the peer must reach for the row to count: below it the verdict is "not
    comparable at this budget" and the row gives both figures (``None``: every row counts)."""

    @property
    def name(self) -> str:
        """The row's name: the task for PPO's rows, ``"<algo>:<task>"`` for the other agents,
        ``"fresh-vs-cached:<task>"`` for the comparison of reset strategies."""
        if self.peer == "cached":
            return f"fresh-vs-cached:{self.task}"
        return self.task if self.algo == "ppo" else f"{self.algo}:{self.task}"


# The table. ``threshold``: a return that splits learned runs from stuck ones. Breakout: runs
# that stay on the plateau end near 7, runs that leave it above 20. CartPole and Acrobot:
# Gymnasium's reward_threshold (solved). MountainCarContinuous: a run that found the goal
# ends near 90, one that never did near 0. PendulumSwingup rewards only a pendulum near
# upright: a run that learned to swing it up ends above 500, one that never did near 0.
# ``comparable_at``: the IQM Playground's published settings reach on the task.
ROWS = (
    # PPO against rejax with gymnax-blines' MinAtar settings, and Brax's PPO.
    Row("gymnax/Breakout-MinAtar", "rejax", "Breakout-MinAtar", REJAX_MINATAR, MINATAR_BUDGET,
        threshold=15.0),
    Row("gymnax/Asterix-MinAtar", "rejax", "Asterix-MinAtar", REJAX_MINATAR, MINATAR_BUDGET),
    Row("gymnax/Freeway-MinAtar", "rejax", "Freeway-MinAtar", REJAX_MINATAR, MINATAR_BUDGET),
    Row("gymnax/SpaceInvaders-MinAtar", "rejax", "SpaceInvaders-MinAtar", REJAX_MINATAR,
        MINATAR_BUDGET),
    Row("brax/inverted_pendulum", "brax", "inverted_pendulum", BRAX_INVERTED_PENDULUM,
        1_048_576),
    # PPO against rejax with its own settings for the classic tasks.
    Row("CartPole-v1", "rejax", "CartPole-v1", REJAX_CLASSIC["CartPole-v1"], threshold=475.0),
    Row("Acrobot-v1", "rejax", "Acrobot-v1", REJAX_CLASSIC["Acrobot-v1"], threshold=-100.0),
    Row("Pendulum-v1", "rejax", "Pendulum-v1", REJAX_CLASSIC["Pendulum-v1"]),
    Row("MountainCarContinuous-v0", "rejax", "MountainCarContinuous-v0",
        REJAX_CLASSIC["MountainCarContinuous-v0"], threshold=50.0),
    # The suites: the authors' settings, or a random policy where no peer trains on them.
    Row(CRAFTAX, "authors", CRAFTAX, CRAFTAX_AUTHORS, CRAFTAX_BUDGET),
    Row("jumanji/Snake-v1", "random", "jumanji/Snake-v1", {}),
    Row("xminigrid/MiniGrid-DoorKey-5x5", "random", "xminigrid/MiniGrid-DoorKey-5x5", {}),
    # PQN against rejax's PQN: its own CartPole settings, purejaxql's MinAtar ones.
    Row("CartPole-v1", "rejax", "CartPole-v1", REJAX_PQN["CartPole-v1"], threshold=475.0,
        algo="pqn"),
    Row("gymnax/Breakout-MinAtar", "rejax", "Breakout-MinAtar", PQN_MINATAR, MINATAR_BUDGET,
        threshold=15.0, algo="pqn"),
    Row("gymnax/Asterix-MinAtar", "rejax", "Asterix-MinAtar", PQN_MINATAR, MINATAR_BUDGET,
        algo="pqn"),
    Row("gymnax/Freeway-MinAtar", "rejax", "Freeway-MinAtar", PQN_MINATAR, MINATAR_BUDGET,
        algo="pqn"),
    Row("gymnax/SpaceInvaders-MinAtar", "rejax", "SpaceInvaders-MinAtar", PQN_MINATAR,
        MINATAR_BUDGET, algo="pqn"),
    # TD3 against rejax's TD3 (Brax's task through rejax's own adapter).
    Row("Pendulum-v1", "rejax", "Pendulum-v1", REJAX_TD3["Pendulum-v1"], algo="td3"),
    Row("MountainCarContinuous-v0", "rejax", "MountainCarContinuous-v0",
        REJAX_TD3["MountainCarContinuous-v0"], threshold=50.0, algo="td3"),
    Row("brax/inverted_pendulum", "rejax", "brax/inverted_pendulum",
        REJAX_TD3["brax/inverted_pendulum"], algo="td3"),
    # MuJoCo Playground: Brax's PPO and SAC as Playground trains them.
    Row(PLAYGROUND_CARTPOLE, "playground", "CartpoleBalance", {}, comparable_at=900.0),
    Row(PLAYGROUND_CARTPOLE, "playground", "CartpoleBalance", {}, algo="sac",
        comparable_at=900.0),
    Row(PLAYGROUND_CARTPOLE, "playground", "CartpoleBalance", {}, algo="td3",
        comparable_at=900.0),
    Row(PLAYGROUND_REACHER, "playground", "ReacherEasy", {}, algo="sac", comparable_at=800.0),
    Row(PLAYGROUND_REACHER, "playground", "ReacherEasy", {}, algo="td3", comparable_at=800.0),
    # Fresh against cached resets: rollax's own preset both ways.
    Row(PLAYGROUND_CARTPOLE, "cached", PLAYGROUND_CARTPOLE, {"reset_strategy": "cached"}),
    Row(PLAYGROUND_REACHER, "cached", PLAYGROUND_REACHER, {"reset_strategy": "cached"}),
    # Playground's swing-ups against a random policy (its peer needs a GPU).
    Row("playground/CartpoleSwingup", "random", "playground/CartpoleSwingup", {}),
    Row("playground/PendulumSwingup", "random", "playground/PendulumSwingup", {},
        threshold=100.0),
    Row("playground/AcrobotSwingup", "random", "playground/AcrobotSwingup", {}),
)  # fmt: skip


def presets(algo: str) -> dict[str, Any]:
    """rollax's presets of ``algo`` (``"ppo"``, ``"pqn"``, ``"sac"`` or ``"td3"``)."""
    import importlib

    return importlib.import_module(f"rollax.agents.{algo}").PRESETS


def budget_of(row: Row, override: int | None) -> int:
    """Steps per seed for ``row``: the override, the row's, or its preset's."""
    return override or row.budget or presets(row.algo)[row.task].total_steps


# ---------------------------------------------------------------------------- rollax


def rollax_run(row: Row, budget: int, seeds: int, episodes: int) -> dict[str, Any]:
    """rollax's agent with the task's preset, every seed in one program."""
    return ppo_run(presets(row.algo)[row.task], row.task, budget, seeds, episodes, row.algo)


def authors_run(row: Row, budget: int, seeds: int, episodes: int) -> dict[str, Any]:
    """rollax's PPO with the suite authors' published settings (``row.peer_settings``)."""
    from rollax.agents.ppo import PPOConfig

    return ppo_run(PPOConfig(**row.peer_settings), row.task, budget, seeds, episodes)


def cached_run(row: Row, budget: int, seeds: int, episodes: int) -> dict[str, Any]:
    """rollax's own agent and preset with ``row.peer_settings`` as environment options (the
    cached reset: every episode of an environment starts where its first did, as Playground's
    Brax wrapper does by default). Evaluated as every row is, on episodes from fresh initial
    states."""
    preset = presets(row.algo)[row.task]
    return ppo_run(preset, row.task, budget, seeds, episodes, row.algo, **row.peer_settings)


GREEDY_EVALUATION = ("pqn",)
"""rollax's agents evaluated with their policy's mode rather than samples. PQN's sampled
policy is epsilon-greedy at its training's final epsilon (0.05); rollax's ``evaluate``
offers that or greedy (0), and 0 is the nearer to rejax's evaluation at epsilon 0.005
(``PQN.make_act``)."""


def ppo_run(
    preset: Any,
    task: str,
    budget: int,
    seeds: int,
    episodes: int,
    algo: str = "ppo",
    **make_options: Any,
) -> dict[str, Any]:
    """rollax's PPO (or another ``algo``) with ``preset`` on ``task`` for ``budget`` steps
    per seed (whole iterations: rollouts, or vectorized steps), ``seeds`` seeds trained
    together in one program (``num_seeds``: each seed's key split from ``key(0)``; rejax's
    seeds are ``key(0)`` to ``key(seeds - 1)``), the environment built with
    ``make_options``."""
    from rollax.runs import get_algorithm

    unit = preset.steps_per_iteration
    steps = max(budget // unit, 1) * unit
    config = preset.replace(total_steps=steps, num_seeds=seeds)
    jax.clear_caches()
    with Timed() as t:
        with Timed() as compile_t:
            agent = get_algorithm(algo).make(config, task, **make_options)
            agent.warmup()
        state = agent.init(jax.random.key(0))
        state, _ = agent.run(state, steps)
        jax.block_until_ready(state)
    key = jax.random.key(10_000)
    greedy = algo in GREEDY_EVALUATION
    returns = np.asarray(agent.evaluate(state, key, episodes, greedy))  # (seeds, episodes)
    report = runs_report(returns.mean(axis=1), t.seconds, compile_t.seconds, steps, seeds)
    if task.startswith("craftax/"):

        def act(obs: Any, t: jax.Array, key: jax.Array) -> jax.Array:
            per_seed = jax.tree.map(lambda x: x.reshape(seeds, episodes, *x.shape[1:]), obs)
            first = jnp.broadcast_to(t == 0, (seeds, episodes))
            carry = agent.policy.init_carry(state, episodes)
            actions = agent.policy.act(state, per_seed, carry, first, key, False)[0]
            return actions.reshape(seeds * episodes)

        unlocked = play(agent.env.env, act, seeds * episodes, key)["achievements"]
        report.update(achievements(unlocked.reshape(seeds, episodes, -1)))
    return report


def runs_report(
    returns: np.ndarray, wall_s: float | None, compile_s: float | None, steps: int, seeds: int
) -> dict[str, Any]:
    """One library's figures on one row: each seed's final return (float ``(seeds,)``), the
    wall time of all seeds and per seed, its compilation and the steps each seed trained."""
    return {
        "returns": [float(r) for r in returns],
        "wall_s": wall_s,
        "wall_per_seed_s": None if wall_s is None else wall_s / seeds,
        "compile_s": compile_s,
        "steps": steps,
    }


def random_run(row: Row, budget: int, seeds: int, episodes: int) -> dict[str, Any]:
    """A uniform random policy: no training, each seed's return (and Craftax achievements)
    over ``episodes`` episodes of its own."""
    import rollax

    env = rollax.make(row.task).env
    total = seeds * episodes

    def act(obs: Any, t: jax.Array, key: jax.Array) -> jax.Array:
        return env.action_space.sample(key, (total,))

    played = play(env, act, total, jax.random.key(10_000))
    returns = played["returns"].reshape(seeds, episodes).mean(axis=1)
    report = runs_report(returns, None, None, 0, seeds)
    if row.task.startswith("craftax/"):
        report.update(achievements(played["achievements"].reshape(seeds, episodes, -1)))
    return report


def play(env: Any, act: Any, episodes: int, key: jax.Array) -> dict[str, np.ndarray]:
    """``episodes`` whole episodes of ``act(obs, t, key) -> actions`` on ``env`` (one batch,
    no autoreset, to the state's episode limit): each episode's return and its last state's
    ``achievements`` leaf where the state has one (Craftax's), bool ``(episodes, 22)``."""
    from rollax.envs import VecEnv

    batch = VecEnv(env, episodes, "disabled", "on_done")

    def unlocked(env_state: Any) -> jax.Array:
        leaves = jax.tree_util.tree_flatten_with_path(env_state)[0]
        found = [x for path, x in leaves if "achievements" in jax.tree_util.keystr(path)]
        return found[0] if found else jnp.zeros((episodes, 0), jnp.bool_)

    @jax.jit
    def run(key: jax.Array) -> tuple[jax.Array, jax.Array]:
        k_reset, k_act = jax.random.split(key)
        env_state, ts = batch.reset(k_reset)
        limit = jnp.max(jnp.asarray(batch.default_params.max_episode_steps))

        def running(carry: tuple) -> jax.Array:
            return (carry[0] < limit) & ~jnp.all(carry[3])

        def step(carry: tuple) -> tuple:
            t, env_state, obs, done, total, last = carry
            action = act(obs, t, jax.random.fold_in(k_act, t))
            env_state, ts = batch.step(env_state, action.astype(batch.action_space.dtype))
            total = total + jnp.where(done, 0.0, ts.reward)
            ended = ts.done & ~done
            last = jnp.where(ended[:, None], unlocked(env_state), last)
            return t + 1, env_state, ts.obs, done | ts.done, total, last

        zeros = jnp.zeros(episodes, jnp.float32)
        carry = (jnp.int32(0), env_state, ts.obs, zeros > 0, zeros, unlocked(env_state))
        _, _, _, _, total, last = jax.lax.while_loop(running, step, carry)
        return total, last

    total, last = run(key)
    return {"returns": np.asarray(total), "achievements": np.asarray(last)}


def achievements(unlocked: np.ndarray) -> dict[str, Any]:
    """Craftax's achievements of played episodes (bool ``(seeds, episodes, 22)``,
    :func:`play`): the mean number an episode unlocked, per seed, and the fraction of all
    episodes that unlocked each one."""
    from craftax.craftax_classic.constants import Achievement

    return {
        "achievements": [float(a) for a in unlocked.sum(axis=2).mean(axis=1)],
        "achievement_rates": {
            a.name.lower(): float(unlocked[..., a.value].mean()) for a in Achievement
        },
    }


# ---------------------------------------------------------------------------- rejax


def rejax_run(row: Row, budget: int, seeds: int, episodes: int) -> dict[str, Any]:
    """rejax's agent (``row.algo``: PPO, PQN or TD3) with the row's settings on gymnax's
    environment (another suite's through ``rejax.compat``): its ``train`` mapped over the
    seeds' keys (``jax.vmap``) in one program, and evaluated the same way."""
    agent = rejax_agent(row.algo, row.peer_env, row.peer_settings, budget)
    jax.clear_caches()
    ts, wall_s, compile_s = rejax_train_seeds(agent, seeds)
    returns = rejax_evaluate_seeds(agent, ts, episodes)  # (seeds, episodes)
    steps = int(np.asarray(ts.global_step)[0])
    return runs_report(returns.mean(axis=1), wall_s, compile_s, steps, seeds)


# ---------------------------------------------------------------------------- Brax


def brax_report(runs: BraxRuns, seeds: int) -> dict[str, Any]:
    """:func:`runs_report` of Brax's runs (its compile time is not apart from its training)."""
    return runs_report(runs.returns, runs.wall_s, None, runs.steps, seeds)


def brax_run(row: Row, budget: int, seeds: int, episodes: int) -> dict[str, Any]:
    """Brax's PPO with its published settings on Brax's own environment (``brax_train``)."""
    from brax import envs

    settings = dict(row.peer_settings)
    if budget < 10 * settings["num_envs"]:  # a quick check: shrink the batch with the budget
        settings.update(num_envs=16, batch_size=16, num_minibatches=4)
    runs = brax_train(lambda: envs.get_environment(row.peer_env), settings, budget, seeds, episodes)
    return brax_report(runs, seeds)


def playground_settings(task: str, algo: str, budget: int) -> dict[str, Any]:
    """Brax's ``algo`` (``"ppo"`` or ``"sac"``) settings as MuJoCo Playground publishes them
    for ``task`` (``dm_control_suite_params.brax_<algo>_config``), as ``train`` arguments:
    the budget and evaluations are the row's, and a small budget shrinks the batch (a quick
    check that the row runs, not a measurement: PPO's under 10 batches of environments,
    SAC's under 10 times its first random steps)."""
    from mujoco_playground.config import dm_control_suite_params

    published = getattr(dm_control_suite_params, f"brax_{algo}_config")(task)
    settings = {k: v for k, v in published.items() if k not in ("num_timesteps", "num_evals")}
    if algo == "sac":
        from brax.training.agents.sac import networks

        factory = dict(settings.pop("network_factory", {}))
        settings["network_factory"] = functools.partial(networks.make_sac_networks, **factory)
        # Brax's SAC takes no num_resets_per_eval: its wrapper's cached starts stay for the run.
        settings.pop("num_resets_per_eval", None)
        if budget < 10 * settings["min_replay_size"]:
            settings.update(num_envs=16, batch_size=16, grad_updates_per_step=1,
                            min_replay_size=min(settings["min_replay_size"], budget // 4),
                            max_replay_size=budget)  # fmt: skip
        return settings
    if budget < 10 * settings["num_envs"]:
        settings.update(num_envs=16, batch_size=16, num_minibatches=4, unroll_length=8)
    # Brax trains at least one iteration (983,040 steps with the published batch) between two
    # of its num_resets_per_eval resets: no more resets than whole iterations fit the budget,
    # which Brax then rounds up to whole iterations.
    iteration = (settings["batch_size"] * settings["num_minibatches"]
                 * settings["unroll_length"] * settings["action_repeat"])  # fmt: skip
    settings["num_resets_per_eval"] = min(
        settings["num_resets_per_eval"], max(budget // iteration, 1)
    )
    return settings


def playground_run(row: Row, budget: int, seeds: int, episodes: int) -> dict[str, Any]:
    """Brax's PPO or SAC (``row.algo``) as MuJoCo Playground trains its DM Control tasks
    (``brax_train``): Playground's published settings (:func:`playground_settings`:
    Brax's default networks, SAC's critics with layer normalization) on its own environment
    (MJX, ``impl="jax"``, as rollax's) through ``wrap_for_brax_training``, the cached reset
    and all. Brax's SAC runs once for the SAC and TD3 rows of a task in one invocation."""
    learner = BRAX_LEARNERS[row.algo]
    return dict(_brax_on_playground(row.peer_env, learner, budget, seeds, episodes))


@functools.cache
def _brax_on_playground(
    task: str, learner: str, budget: int, seeds: int, episodes: int
) -> dict[str, Any]:
    """:func:`playground_run`'s figures, once per learner, task and size."""
    from mujoco_playground import registry, wrapper

    env_config = registry.get_default_config(task)
    env_config["impl"] = "jax"
    runs = brax_train(
        lambda: registry.load(task, config=env_config),
        playground_settings(task, learner, budget),
        budget,
        seeds,
        episodes,
        learner,
        wrap_env_fn=wrapper.wrap_for_brax_training,
    )
    return brax_report(runs, seeds)


BRAX_LEARNERS = {"ppo": "ppo", "sac": "sac", "td3": "sac"}
"""Brax's learner beside each of rollax's agents on Playground's rows: Brax has no TD3, and
SAC is Playground's off-policy learner."""


PEERS = {
    "rejax": rejax_run,
    "brax": brax_run,
    "playground": playground_run,
    "authors": authors_run,
    "random": random_run,
    "cached": cached_run,
}


# ---------------------------------------------------------------------------- table


def run_row(row: Row, budget: int, seeds: int, episodes: int, reps: int) -> dict[str, Any]:
    """Both libraries on one task, ``seeds`` seeds each, and the statistics comparing them."""
    report: dict[str, Any] = {
        "budget": budget,
        "peer": row.peer,
        "peer_env": row.peer_env,
        "seeds": seeds,
        "threshold": row.threshold,
        "comparable_at": row.comparable_at,
    }
    for name, fn in ((row.peer, PEERS[row.peer]), ("rollax", rollax_run)):
        report[name] = fn(row, budget, seeds, episodes)
        print(f"{row.name} {name}: {describe(report[name])}", flush=True)
    report.update(compare(report, row.peer, row.threshold, reps, row.comparable_at))
    return report


def seeds_above(returns: list[float], threshold: float | None) -> int | None:
    """How many seeds' returns lie above ``threshold`` (``None`` where the row has none)."""
    return None if threshold is None else int(sum(r > threshold for r in returns))


def compare(
    report: dict[str, Any],
    peer_name: str,
    threshold: float | None,
    reps: int,
    comparable_at: float | None = None,
) -> dict[str, Any]:
    """The statistics of one row (``report``: :func:`run_row`'s, with both libraries' runs):
    each library's IQM over its seeds, the IQM difference and the probability of
    improvement, each with its interval (:func:`interval_estimates`), the :func:`verdict`
    ("not comparable at this budget" where the peer's IQM stays below ``comparable_at``),
    the seeds above the threshold and the ratio of wall time per seed."""
    from rliable import metrics

    mine, peer = report["rollax"], report[peer_name]
    x, y = np.asarray(mine["returns"])[:, None], np.asarray(peer["returns"])[:, None]
    iqm = interval_estimates({"rollax": x, peer_name: y}, metrics.aggregate_iqm, reps)

    def iqm_difference(a: np.ndarray, b: np.ndarray) -> float:
        return metrics.aggregate_iqm(a) - metrics.aggregate_iqm(b)

    difference = interval_estimates({"d": [x, y]}, iqm_difference, reps)["d"]
    improvement = interval_estimates({"p": [x, y]}, metrics.probability_of_improvement, reps)
    ratio = None
    if mine["wall_per_seed_s"] is not None and peer["wall_per_seed_s"] is not None:
        ratio = mine["wall_per_seed_s"] / peer["wall_per_seed_s"]
    return {
        "iqm": iqm,
        "iqm_difference": difference,
        "probability_of_improvement": improvement["p"],
        "verdict": (
            "not comparable at this budget"
            if comparable_at is not None and iqm[peer_name][0] < comparable_at
            else verdict(improvement["p"], difference)
        ),
        "above_threshold": {
            "rollax": seeds_above(mine["returns"], threshold),
            peer_name: seeds_above(peer["returns"], threshold),
        },
        "ratio_wall_per_seed": ratio,
    }


def describe(runs: dict[str, Any]) -> str:
    """One library's runs on one line: each seed's return, wall time (and achievements)."""
    text = "returns " + ", ".join(f"{r:.2f}" for r in runs["returns"])
    if runs["wall_s"] is not None:
        compiling = "" if runs["compile_s"] is None else f" ({runs['compile_s']:.1f} s compiling)"
        text += (f"; {runs['steps']:,} steps per seed, {runs['wall_s']:.1f} s in all"
                 f"{compiling}, {runs['wall_per_seed_s']:.1f} s per seed")  # fmt: skip
    if "achievements" in runs:
        text += "; achievements " + ", ".join(f"{a:.2f}" for a in runs["achievements"])
    return text


def print_table(results: dict[str, dict]) -> None:
    """The markdown table of every row that ran: IQM [95% CI] over the seeds, their
    difference, the probability of improvement, the verdict, seeds above the threshold and
    wall time per seed."""
    print("\n| task | seeds | rollax IQM | peer IQM | IQM difference | P(rollax > peer) | "
          "verdict | above threshold | wall per seed rollax / peer (s) | ratio |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")

    def interval(e: list[float], digits: int = 2) -> str:
        return f"{e[0]:.{digits}f} [{e[1]:.{digits}f}, {e[2]:.{digits}f}]"

    def number(value: float | None, digits: int) -> str:
        return "-" if value is None else f"{value:.{digits}f}"

    for task, r in results.items():
        mine, peer = r["rollax"], r[r["peer"]]
        counts = r["above_threshold"]
        above = "-" if r["threshold"] is None else (
            f"{counts['rollax']} / {counts[r['peer']]} (> {r['threshold']:g})"
        )  # fmt: skip
        print(f"| {task} | {r['seeds']} | {interval(r['iqm']['rollax'])} | "
              f"{r['peer']} {interval(r['iqm'][r['peer']])} | {interval(r['iqm_difference'])} | "
              f"{interval(r['probability_of_improvement'])} | {r['verdict']} | {above} | "
              f"{number(mine['wall_per_seed_s'], 1)} / {number(peer['wall_per_seed_s'], 1)} | "
              f"{number(r['ratio_wall_per_seed'], 2)} |")  # fmt: skip


def restate(saved: Path, reps: int) -> None:
    """The table and the JSON line of a saved report (its last line), the statistics
    computed again from its runs with ``reps`` resamples."""
    report = json.loads(saved.read_text().strip().splitlines()[-1])
    for r in report["results"].values():
        r.update(compare(r, r["peer"], r["threshold"], reps, r.get("comparable_at")))
    report["args"]["reps"] = reps
    print_table(report["results"])
    emit(report)


def main() -> None:
    tasks = [row.name for row in ROWS]
    trained = [row.name for row in ROWS if row.peer in ("rejax", "brax")]
    parser = Parser(__doc__)
    parser.add_argument("--tasks", nargs="+", default=trained, choices=tasks, metavar="TASK",
                        help="rows to run, in this order (default: every row whose peer is "
                             f"another library: {', '.join(trained)}; the suites' rows, "
                             f"{', '.join(t for t in tasks if t not in trained)}, are named "
                             "here)")  # fmt: skip
    parser.seeds(10).episodes(64)
    parser.add_argument("--budget", type=int, default=None,
                        help="steps per seed for every row (default: each row's own)")  # fmt: skip
    parser.reps(5_000)
    parser.add_argument("--from", dest="saved", type=Path, default=None, metavar="FILE",
                        help="train nothing: the statistics and the table again from the runs "
                             "of a saved report (a file whose last line is this script's "
                             "JSON), e.g. with other --reps")  # fmt: skip
    args = parser.parse_args()
    if args.saved is not None:
        restate(args.saved, args.reps)
        return
    banner()
    rows = {row.name: row for row in ROWS}
    results, skipped = {}, {}
    for name in args.tasks:
        row = rows[name]
        if row.task not in presets(row.algo):
            skipped[name] = f"rollax ships no {row.algo.upper()} preset for this task yet"
            print(f"{name}: skipped, {skipped[name]}", flush=True)
            continue
        budget = budget_of(row, args.budget)
        results[name] = run_row(row, budget, args.seeds, args.episodes, args.reps)
    print_table(results)
    report = {"args": vars(args), "jax": jax.__version__, "cpu": cpu_name()}
    emit({**report, "results": results, "skipped": skipped})


if __name__ == "__main__":
    main()
