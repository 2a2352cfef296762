"""Learning quality: PPO's final return and wall time, rollax's presets against the strongest peer.

One row per task rollax ships a PPO preset for, each run side by side with its peer on the
same budget, ``--seeds`` seeds one after the other (each library compiles afresh for every
seed: ``jax.clear_caches()``):

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
==============================  ===================  ==============================================

Figures per run:

- **wall time**: compile and training of the whole budget (rollax: ``make_ppo``, ``warmup``,
  ``init``, ``run``; rejax: its jitted ``train``; Brax: ``ppo.train`` less its final
  evaluation). Evaluation is not timed.
- **final return**: the mean return of ``--episodes`` (64) episodes of the final policy with
  sampled actions, each library with its own evaluator (rollax ``agent.evaluate``, rejax
  ``rejax.evaluate``, Brax's ``Evaluator`` with ``deterministic_eval=False``).
- **achievements** (Craftax): the mean number of Craftax's 22 achievements an episode of the
  final policy unlocked, and how often each was unlocked, over the same number of episodes.

Each row reports the medians over seeds and the ratios rollax / peer (return and wall
time). rollax trains on its own environments where it has them (``CartPole-v1``...: the
dynamics of Gymnasium's, tested for parity), on gymnax's and Brax's through its adapters
otherwise; the peers on gymnax's and Brax's own.

rejax 0.1.3 expects gymnax's old 5-value ``step``: its environment is adapted (done =
terminated or truncated). Brax's PPO calls ``jax.device_put_replicated``, which jax 0.10
removed: a shim stacks the value and puts it on the devices with a ``NamedSharding``.

The last line printed is one JSON object with every figure.

Usage:
    python benchmarks/returns.py [--tasks TASK ...] [--seeds 3] [--episodes 64]
        [--budget STEPS]  # override every row's budget (a quick check, not the table)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from _common import FiveValueStep, Timed, median_of

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
    anneal_lr=True,
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


@dataclasses.dataclass(frozen=True)
class Row:
    """One task of the table."""

    task: str
    """rollax's id (and the preset's key)."""
    peer: str
    """``"rejax"``, ``"brax"``, ``"authors"`` (the suite authors' PPO settings, run by
    rollax's PPO) or ``"random"`` (a uniform random policy, where no peer trains on the
    suite: the floor learning must clear)."""
    peer_env: str
    """The peer's id of the same task (gymnax's or Brax's; rollax's for the others)."""
    peer_settings: dict
    """The peer's hyperparameters."""
    budget: int | None = None
    """Environment steps per seed (``None``: the preset's ``total_steps``)."""


ROWS = [
    *(
        Row(f"gymnax/{game}-MinAtar", "rejax", f"{game}-MinAtar", REJAX_MINATAR, MINATAR_BUDGET)
        for game in ("Breakout", "Asterix", "Freeway", "SpaceInvaders")
    ),
    Row("brax/inverted_pendulum", "brax", "inverted_pendulum", BRAX_INVERTED_PENDULUM, 1_048_576),
    *(Row(task, "rejax", task, REJAX_CLASSIC[task]) for task in REJAX_CLASSIC),
    Row(CRAFTAX, "authors", CRAFTAX, CRAFTAX_AUTHORS, CRAFTAX_BUDGET),
    Row("jumanji/Snake-v1", "random", "jumanji/Snake-v1", {}),
    Row("xminigrid/MiniGrid-DoorKey-5x5", "random", "xminigrid/MiniGrid-DoorKey-5x5", {}),
]


def budget_of(row: Row, override: int | None) -> int:
    """Steps per seed for ``row``: the override, the row's, or its preset's."""
    from rollax.agents.ppo import PRESETS

    return override or row.budget or PRESETS[row.task].total_steps


# ---------------------------------------------------------------------------- rollax


def rollax_run(row: Row, budget: int, seed: int, episodes: int) -> dict[str, Any]:
    """rollax's PPO with the task's preset: wall time, steps trained and final return."""
    from rollax.agents.ppo import PRESETS

    return ppo_run(PRESETS[row.task], row.task, budget, seed, episodes)


def authors_run(row: Row, budget: int, seed: int, episodes: int) -> dict[str, Any]:
    """rollax's PPO with the suite authors' published settings (``row.peer_settings``)."""
    from rollax.agents.ppo import PPOConfig

    return ppo_run(PPOConfig(**row.peer_settings), row.task, budget, seed, episodes)


def ppo_run(preset: Any, task: str, budget: int, seed: int, episodes: int) -> dict[str, Any]:
    """rollax's PPO with ``preset`` on ``task`` for ``budget`` steps (whole rollouts)."""
    from rollax.agents.ppo import make_ppo

    steps = max(budget // preset.batch_size, 1) * preset.batch_size
    config = preset.replace(total_steps=steps)
    jax.clear_caches()
    with Timed() as t:
        with Timed() as compile_t:
            agent = make_ppo(config, task)
            agent.warmup()
        state = agent.init(jax.random.key(seed))
        state, _ = agent.run(state, steps)
        jax.block_until_ready(state)
    key = jax.random.key(10_000 + seed)
    returns = agent.evaluate(state, key, episodes, False)
    report = {
        "wall_s": t.seconds,
        "compile_s": compile_t.seconds,
        "steps": steps,
        "final_return": float(np.mean(returns)),
    }
    if task.startswith("craftax/"):

        def act(obs: Any, t: jax.Array, key: jax.Array) -> jax.Array:
            first = jnp.broadcast_to(t == 0, (1, episodes))
            seeded = jax.tree.map(lambda x: x[None], obs)
            carry = agent.policy.init_carry(state, episodes)
            return agent.policy.act(state, seeded, carry, first, key, False)[0][0]

        report.update(achievements(play(agent.env.env, act, episodes, key)["achievements"]))
    return report


def random_run(row: Row, budget: int, seed: int, episodes: int) -> dict[str, Any]:
    """A uniform random policy: no training, its return (and Craftax achievements)."""
    import rollax

    env = rollax.make(row.task).env

    def act(obs: Any, t: jax.Array, key: jax.Array) -> jax.Array:
        return env.action_space.sample(key, (episodes,))

    played = play(env, act, episodes, jax.random.key(10_000 + seed))
    report = {"wall_s": None, "steps": 0, "final_return": float(np.mean(played["returns"]))}
    if row.task.startswith("craftax/"):
        report.update(achievements(played["achievements"]))
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
    """Craftax's achievements of played episodes (bool ``(episodes, 22)``, :func:`play`): the
    mean number each episode unlocked and the fraction of episodes that unlocked each one."""
    from craftax.craftax_classic.constants import Achievement

    return {
        "achievements": float(unlocked.sum(axis=1).mean()),
        "achievement_rates": {
            a.name.lower(): float(unlocked[:, a.value].mean()) for a in Achievement
        },
    }


# ---------------------------------------------------------------------------- rejax


def rejax_run(row: Row, budget: int, seed: int, episodes: int) -> dict[str, Any]:
    """rejax's PPO with the row's settings on gymnax's environment."""
    import gymnax
    from rejax import PPO
    from rejax.evaluate import evaluate

    env, env_params = gymnax.make(row.peer_env)
    env = FiveValueStep(env)
    algo = PPO.create(
        env=env,
        env_params=env_params,
        **row.peer_settings,
        total_timesteps=budget,
        eval_freq=budget,
        skip_initial_evaluation=True,
    )
    algo = algo.replace(eval_callback=lambda algo, ts, rng: jnp.zeros(()))
    jax.clear_caches()
    key = jax.random.key(seed)
    with Timed() as t:
        with Timed() as compile_t:
            train = jax.jit(lambda key: algo.train(key)[0]).lower(key).compile()
        ts = jax.block_until_ready(train(key))
    horizon = int(env_params.max_steps_in_episode)
    returns = jax.jit(
        lambda ts, key: evaluate(algo.make_act(ts), key, env, env_params, episodes, horizon)[1]
    )(ts, jax.random.key(10_000 + seed))
    return {
        "wall_s": t.seconds,
        "compile_s": compile_t.seconds,
        "steps": int(ts.global_step),
        "final_return": float(np.mean(returns)),
    }


# ---------------------------------------------------------------------------- Brax


def _replicate_shim() -> None:
    """Brax's PPO calls ``jax.device_put_replicated`` (removed in jax 0.10): stack the value
    once per device and put it there with a ``NamedSharding`` over the devices."""
    if hasattr(jax, "device_put_replicated"):
        return

    def device_put_replicated(value: Any, devices: list) -> Any:
        mesh = jax.sharding.Mesh(np.array(devices), ("d",))
        sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("d"))
        stacked = jax.tree.map(lambda x: jnp.stack([x] * len(devices)), value)
        return jax.device_put(stacked, sharding)

    jax.device_put_replicated = device_put_replicated


def brax_run(row: Row, budget: int, seed: int, episodes: int) -> dict[str, Any]:
    """Brax's PPO with its published settings; its final evaluation is not timed."""
    from brax import envs
    from brax.training.agents.ppo import train as ppo

    _replicate_shim()
    final: dict[str, Any] = {}
    settings = dict(row.peer_settings)
    if budget < 10 * settings["num_envs"]:  # a quick check: shrink the batch with the budget
        settings.update(num_envs=16, batch_size=16, num_minibatches=4)
    jax.clear_caches()
    with Timed() as t:
        ppo.train(
            environment=envs.get_environment(row.peer_env),
            num_timesteps=budget,
            num_evals=1,
            num_eval_envs=episodes,
            deterministic_eval=False,
            seed=seed,
            progress_fn=lambda step, m: final.update(step=step, **m),
            **settings,
        )
    eval_s = float(final.get("eval/epoch_eval_time", 0.0))
    return {
        "wall_s": t.seconds - eval_s,
        "steps": int(final["step"]),
        "final_return": float(final["eval/episode_reward"]),
    }


PEERS = {"rejax": rejax_run, "brax": brax_run, "authors": authors_run, "random": random_run}


# ---------------------------------------------------------------------------- table


def run_row(row: Row, budget: int, seeds: int, episodes: int) -> dict[str, Any]:
    """Both libraries on one task, seed after seed; the medians and ratios."""
    report: dict[str, Any] = {"budget": budget, "peer": row.peer, "peer_env": row.peer_env}
    for name, fn in ((row.peer, PEERS[row.peer]), ("rollax", rollax_run)):
        runs = []
        for seed in range(seeds):
            runs.append(fn(row, budget, seed, episodes))
            print(f"{row.task:28s} {name:7s} seed {seed}: {describe(runs[-1])}", flush=True)
        report[name] = {
            "runs": runs,
            "median_return": statistics.median(r["final_return"] for r in runs),
            "median_wall_s": median_of(runs, "wall_s"),  # None: a random policy trains not
        }
        if "achievements" in runs[0]:
            report[name]["median_achievements"] = median_of(runs, "achievements")
    mine, peer = report["rollax"], report[row.peer]
    report["return_at_least_peer"] = mine["median_return"] >= peer["median_return"]
    # A ratio of returns means something only where both are positive (Pendulum's are
    # negative, MountainCar's peer return is about 0): the difference is always reported.
    both_positive = mine["median_return"] > 0 and peer["median_return"] > 0
    report["ratio_return"] = (
        mine["median_return"] / peer["median_return"] if both_positive else None
    )
    report["return_difference"] = mine["median_return"] - peer["median_return"]
    report["ratio_wall_s"] = (
        mine["median_wall_s"] / peer["median_wall_s"] if peer["median_wall_s"] else None
    )
    return report


def describe(run: dict[str, Any]) -> str:
    """One run on one line: steps, wall time, return (and Craftax achievements)."""
    text = f"final return {run['final_return']:8.2f}"
    if run["wall_s"] is not None:
        text = (f"{run['steps']:>9,} steps in {run['wall_s']:6.1f} s "
                f"({run.get('compile_s', 0):4.1f} s compiling), {text}")  # fmt: skip
    if "achievements" in run:
        text += f", {run['achievements']:.2f} achievements per episode"
    return text


def print_table(results: dict[str, dict]) -> None:
    """The markdown table of every row that ran."""
    print("\n| task | budget | peer | return rollax | return peer | wall rollax (s) | "
          "wall peer (s) | return >= peer | wall ratio |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")

    def number(value: float | None, digits: int) -> str:
        return "-" if value is None else f"{value:.{digits}f}"

    for task, r in results.items():
        mine, peer = r["rollax"], r[r["peer"]]
        print(f"| {task} | {r['budget']:,} | {r['peer']} | {mine['median_return']:.2f} | "
              f"{peer['median_return']:.2f} | {number(mine['median_wall_s'], 1)} | "
              f"{number(peer['median_wall_s'], 1)} | "
              f"{'yes' if r['return_at_least_peer'] else 'no'} | "
              f"{number(r['ratio_wall_s'], 2)} |")  # fmt: skip


def main() -> None:
    tasks = [row.task for row in ROWS]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=tasks, choices=tasks, metavar="TASK",
                        help=f"rows to run (default: all): {', '.join(tasks)}")  # fmt: skip
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--episodes", type=int, default=64, help="evaluation episodes")
    parser.add_argument("--budget", type=int, default=None,
                        help="steps per seed for every row (default: each row's own)")  # fmt: skip
    args = parser.parse_args()
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}", flush=True)
    from rollax.agents.ppo import PRESETS

    results, skipped = {}, {}
    for row in ROWS:
        if row.task not in args.tasks:
            continue
        if row.task not in PRESETS:
            skipped[row.task] = "rollax ships no PPO preset for this task yet"
            print(f"{row.task}: skipped, {skipped[row.task]}", flush=True)
            continue
        results[row.task] = run_row(row, budget_of(row, args.budget), args.seeds, args.episodes)
    print_table(results)
    print(json.dumps({"args": vars(args), "results": results, "skipped": skipped}))


if __name__ == "__main__":
    main()
