"""The peer libraries every benchmark runs beside rollax, each in one place: rejax's agents
(:func:`rejax_agent` and the programs built from it), Brax's PPO and SAC
(:func:`brax_train`) and gymnax's stepping (:func:`gymnax_rollout`).

rejax 0.1.3 expects gymnax's old 5-value ``step``: its environment is adapted
(:class:`FiveValueStep`: done = terminated or truncated). Brax's PPO calls
``jax.device_put_replicated``, which jax 0.10 removed: :func:`brax_replicate_shim` puts it
back.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from _common import Timed, random_actions

# ---------------------------------------------------------------------------- gymnax


def gymnax_rollout(env_id: str, num_envs: int, num_steps: int) -> Callable[[], tuple]:
    """A jitted rollout of gymnax's ``env_id`` under ``vmap`` with its own autoreset (a reset
    computed every step; the caller splits one key per environment per step, as gymnax's API
    requires), replaying :func:`random_actions`. Returns a zero-argument function giving
    ``(final_state, episodes_finished)``."""
    import gymnax

    env, params = gymnax.make(env_id)
    actions = random_actions(num_steps, num_envs, int(env.action_space(params).n))
    keys = jax.random.split(jax.random.key(0), num_envs)
    _, state = jax.vmap(env.reset, in_axes=(0, None))(keys, params)
    step = jax.vmap(env.step, in_axes=(0, 0, 0, None))

    @jax.jit
    def rollout(state, key, actions):
        def body(carry, action):
            state, key = carry
            key, step_key = jax.random.split(key)
            _, state, _, terminated, truncated, _ = step(
                jax.random.split(step_key, num_envs), state, action, params
            )
            return (state, key), (terminated | truncated).sum()

        (state, _), done = jax.lax.scan(body, (state, key), actions)
        return state, done.sum()

    key = jax.random.key(2)
    return lambda: rollout(state, key, actions)


# ---------------------------------------------------------------------------- rejax


class FiveValueStep:
    """gymnax 1.0's environment with the old 5-value step rejax 0.1.3 expects."""

    def __init__(self, env: Any) -> None:
        self._env = env

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "_env":  # copying builds one without _env
            raise AttributeError(name)
        return getattr(self._env, name)

    def step(self, key, state, action, params=None):
        obs, state, reward, terminated, truncated, info = self._env.step(key, state, action, params)
        return obs, state, reward, jnp.logical_or(terminated, truncated), info

    def __hash__(self) -> int:
        return hash((type(self), id(self._env)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FiveValueStep) and other._env is self._env


def rejax_env(env_id: str) -> tuple[Any, Any]:
    """rejax's environment of ``env_id`` and its parameters: gymnax's id, or another suite's
    (``"brax/ant"``) through rejax's own adapter, with the 5-value step."""
    import gymnax

    if "/" in env_id:  # another suite, through rejax's own adapter of it
        from rejax.compat import create

        env, env_params = create(env_id)
        # rejax 0.1.3's adapter predates gymnax 1.0's time limit check (``state.time``), which
        # Brax's states lack: Brax's own episode wrapper ends episodes at their limit.
        env.is_truncated = lambda state, params: jnp.zeros((), jnp.bool_)
    else:
        env, env_params = gymnax.make(env_id)
    return FiveValueStep(env), env_params


def rejax_agent(algo: str, env_id: str, settings: dict, total: int) -> Any:
    """rejax's agent ``algo`` (``"ppo"``, ``"dqn"``, ``"pqn"``, ``"sac"``, ``"td3"``) with
    ``settings`` on :func:`rejax_env`'s environment, for a budget of ``total`` steps, its own
    evaluation off (rollax's figures evaluate outside the timed training)."""
    import rejax

    env, env_params = rejax_env(env_id)
    agent = getattr(rejax, algo.upper()).create(
        env=env,
        env_params=env_params,
        **settings,
        total_timesteps=total,
        eval_freq=total,
        skip_initial_evaluation=True,
    )
    return agent.replace(eval_callback=lambda algo, ts, rng: jnp.zeros(()))


def rejax_steps_per_iteration(agent: Any) -> int:
    """Environment steps of one of rejax's ``train_iteration``: one vectorized step for DQN
    and SAC, ``policy_delay`` of them for TD3 (its critic steps before each actor step) and a
    rollout of ``num_steps`` for PPO and PQN."""
    steps = agent.num_envs * getattr(agent, "num_steps", 1)
    return steps * getattr(agent, "policy_delay", 1)


def rejax_chunk(agent: Any, steps: int) -> Callable[[Any], Any]:
    """``steps`` environment steps of rejax's training as its ``train`` runs them between two
    evaluations (``train_iteration`` in a ``fori_loop``). ``steps`` must be whole
    iterations (:func:`rejax_steps_per_iteration`)."""
    per_iteration = rejax_steps_per_iteration(agent)
    iterations = steps // per_iteration
    if iterations * per_iteration != steps:
        raise ValueError(
            f"a chunk of rejax's training must be a multiple of its {per_iteration:,} steps "
            f"per iteration, got {steps:,}"
        )

    def run(ts: Any) -> Any:
        return jax.lax.fori_loop(0, iterations, lambda _, ts: agent.train_iteration(ts), ts)

    return run


def rejax_evaluator(agent: Any, episodes: int) -> Callable[[Any, jax.Array], jax.Array]:
    """``evaluate(ts, key)``: the returns of ``episodes`` episodes of ``agent``'s policy in
    the training state ``ts`` (rejax's ``evaluate`` with its ``make_act``)."""
    from rejax.evaluate import evaluate

    horizon = int(agent.env_params.max_steps_in_episode)

    def run(ts: Any, key: jax.Array) -> jax.Array:
        return evaluate(agent.make_act(ts), key, agent.env, agent.env_params, episodes, horizon)[1]

    return run


@dataclasses.dataclass(frozen=True)
class RejaxPrograms:
    """rejax's programs for training in chunks, compiled ahead of time over a batch of seeds
    (``vmap``): the initial states, one chunk, the evaluation (one key for every seed)."""

    state: Any
    """The seeds' initial training states."""
    chunk: Callable[[Any], Any]
    """One chunk of training of every seed."""
    evaluate: Callable[[Any, jax.Array], jax.Array]
    """Returns ``(seeds, episodes)`` of every seed's policy."""
    compile_s: float
    """Seconds compiling the three programs and initializing."""


def rejax_programs(agent: Any, keys: jax.Array, chunk: int, episodes: int) -> RejaxPrograms:
    """Compile initialization, a chunk of ``chunk`` steps (:func:`rejax_chunk`) and the
    evaluation (:func:`rejax_evaluator`), each mapped over the seeds' ``keys``, and
    initialize: the compile time is all of it."""
    evaluate = rejax_evaluator(agent, episodes)
    with Timed() as t:
        init = jax.jit(jax.vmap(agent.init_state)).lower(keys).compile()
        state = init(keys)
        run = jax.jit(jax.vmap(rejax_chunk(agent, chunk))).lower(state).compile()
        ev = jax.jit(jax.vmap(evaluate, in_axes=(0, None))).lower(state, jax.random.key(0))
        ev = ev.compile()
    return RejaxPrograms(state, run, ev, t.seconds)


def rejax_train_seeds(agent: Any, seeds: int) -> tuple[Any, float, float]:
    """rejax's whole ``train`` mapped over the keys ``key(0)`` to ``key(seeds - 1)`` in one
    program: the final training states, the wall time (compile and training) and the
    compile time."""
    keys = jnp.stack([jax.random.key(seed) for seed in range(seeds)])
    with Timed() as t:
        with Timed() as compile_t:
            train = jax.jit(jax.vmap(lambda key: agent.train(key)[0])).lower(keys).compile()
        ts = jax.block_until_ready(train(keys))
    return ts, t.seconds, compile_t.seconds


def rejax_evaluate_seeds(agent: Any, ts: Any, episodes: int) -> np.ndarray:
    """The returns ``(seeds, episodes)`` of every seed's final policy (the training states
    ``ts`` of :func:`rejax_train_seeds`), each seed with its own key split from
    ``key(10_000)``."""
    seeds = int(np.asarray(ts.global_step).shape[0])
    keys = jax.random.split(jax.random.key(10_000), seeds)
    return np.asarray(jax.jit(jax.vmap(rejax_evaluator(agent, episodes)))(ts, keys))


# ---------------------------------------------------------------------------- Brax


def brax_replicate_shim() -> None:
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


@dataclasses.dataclass(frozen=True)
class BraxRuns:
    """What :func:`brax_train` measured over its seeds."""

    returns: np.ndarray
    """Each seed's final evaluation return, float ``(seeds,)``."""
    wall_s: float
    """Seconds training all the seeds (compile included, final evaluations not)."""
    steps: int
    """Environment steps each seed trained (Brax rounds the budget up to whole iterations)."""


def brax_train(
    make_env: Callable[[], Any],
    settings: dict,
    budget: int,
    seeds: int,
    episodes: int,
    algo: str = "ppo",
    **train: Any,
) -> BraxRuns:
    """Brax's PPO (or SAC: ``algo="sac"``) on a fresh ``make_env()`` for each seed, seed
    after seed (its ``train`` runs a whole training loop in Python and cannot be mapped over
    keys), with ``settings`` and ``train`` as its arguments, compiled afresh for each seed;
    its final evaluation (``episodes`` episodes, sampled actions) is not timed."""
    trainer = importlib.import_module(f"brax.training.agents.{algo}.train")
    brax_replicate_shim()
    returns, wall_s = [], 0.0
    for seed in range(seeds):
        final: dict[str, Any] = {}
        jax.clear_caches()
        with Timed() as t:
            trainer.train(
                environment=make_env(),
                num_timesteps=budget,
                num_evals=1,
                num_eval_envs=episodes,
                deterministic_eval=False,
                seed=seed,
                progress_fn=lambda step, m: final.update(step=step, **m),  # noqa: B023
                **settings,
                **train,
            )
        wall_s += t.seconds - float(final.get("eval/epoch_eval_time", 0.0))
        returns.append(float(final["eval/episode_reward"]))
    return BraxRuns(np.asarray(returns), wall_s, int(final["step"]))
