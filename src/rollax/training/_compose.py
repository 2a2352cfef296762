"""The composition of an algorithm's pieces into an :class:`~rollax.training.Agent`.

:func:`build_agent` maps the one-seed, one-shard pieces
(:class:`~rollax.training.AgentPieces`) over the members of the state's seed axis and over
shards, places them on devices, and wires ``init``, ``run`` (a compiled loop whose length
is data), ``evaluate`` and ``warmup``.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rollax._compile import FastCompile, compile_side_by_side
from rollax.envs import VecEnv
from rollax.training._agent import (
    Agent,
    AgentPieces,
    ShardStart,
    check_budget,
    layout_for,
)
from rollax.training._evaluate import make_evaluator
from rollax.training._layout import (
    SEED,
    SHARD,
    SHARED,
    Layout,
    map_seeds,
)
from rollax.training._policy import Policy
from rollax.types import PRNGKey

__all__ = ["build_agent"]


def build_agent(name: str, config: Any, env: VecEnv, pieces: AgentPieces) -> Agent:
    """Compose an algorithm's one-seed, one-shard pieces into an :class:`Agent`.

    The layer maps the pieces over seeds and shards and places them on the layout's devices
    (:meth:`rollax.training.Layout.map`); an agent never maps seeds or names a device.

    Args:
        name: The algorithm's registered name.
        config: Its configuration (with ``num_seeds``, ``num_envs``, ``num_shards`` and
            ``devices``): the layer lays its seeds and shards out (:func:`layout_for`); the
            one collective the pieces may call is the mean of
            :func:`gradient_step_for`'s step.
        env: One shard's batch of ``num_envs // num_shards`` environments.
        pieces: The algorithm's pieces (:class:`~rollax.training.AgentPieces`).
    """
    if not isinstance(pieces, AgentPieces):
        raise TypeError(f"build_agent: pieces must be an AgentPieces, got {type(pieces).__name__}")
    config = config.with_shards()  # the agent's config records the shards the layout uses
    layout = layout_for(config)
    members_policy = seed_policy(pieces.policy, pieces.state_layout, layout.num_seeds)
    evaluate, evaluate_program = make_evaluator(
        env, members_policy, layout.num_seeds, layout.num_seeds * int(config.num_envs),
        layout.replicated,
    )  # fmt: skip
    composed = _Composed(config, env, pieces, layout, evaluate_program)
    return Agent(
        name=name,
        config=config,
        env=env,
        init=composed.init_members,
        run=composed.run,
        evaluate=evaluate,
        policy=members_policy,
        metric_names=composed.metric_names,
        steps_per_iteration=int(pieces.steps_per_iteration),
        with_budget=composed.with_budget,
        warmup=composed.warmup,
        layout=layout,
        state_layout=pieces.state_layout,
        to_checkpoint=pieces.to_checkpoint or (lambda state: state),
        from_checkpoint=pieces.from_checkpoint or (lambda saved: saved),
        hyperparams=pieces.hyperparams,
        driver=pieces.driver,
    )


@dataclasses.dataclass(frozen=True, eq=False)
class _Composed:
    """An algorithm's pieces mapped over its seeds and shards: what :func:`build_agent` wires.

    Attributes:
        config: The configuration, with the shards the layout uses.
        env: One shard's batch.
        pieces: The algorithm's one-seed, one-shard pieces.
        layout: Where its seeds and shards sit.
        evaluate_program: ``num_episodes -> program`` of the evaluator (both policies),
            for :meth:`warmup`.
    """

    config: Any
    env: VecEnv
    pieces: AgentPieces
    layout: Layout
    evaluate_program: Callable[[int], Any]

    @functools.cached_property
    def metric_names(self) -> tuple[str, ...]:
        """The agent's own metrics."""
        return tuple(self.pieces.metric_names)

    @functools.cached_property
    def member_hparams(self) -> Any:
        """Each member's hyperparameters, float32 ``(members,)`` leaves."""
        members = [self.pieces.hyperparams(c) for c in self.config.member_configs()]
        return jax.tree.map(lambda *values: np.asarray(values, np.float32), *members)

    @functools.cached_property
    def seed_index(self) -> np.ndarray:
        """int32 ``(members,)``: the run seed each member trains.

        Member m is seed m % num_seeds of its grid point, with that seed's keys and
        environments.
        """
        return np.arange(self.layout.num_seeds, dtype=np.int32) % int(self.config.num_seeds)

    def env_params_view(self, env_params: Any) -> tuple[Any, Any]:
        """The params as the pieces take them, and their layout."""
        default = self.env.default_params
        return self.layout.env_params_view(env_params, default, int(self.config.num_envs))

    def init_global(self, key: PRNGKey, env_params: Any) -> Any:
        """Every member's state from the run's ``key``, each shard reset with its own part."""
        run_seeds, shards = int(self.config.num_seeds), self.layout.num_shards
        k_env, k_seeds = jax.random.split(key)
        # Threefry splits are partitionable: seed s's key does not depend on how many seeds
        # there are, so a member starts as its seed would in a run without a sweep.
        seed_keys = jax.random.split(k_seeds, run_seeds)[self.seed_index]
        parts = self.seed_index[:, None] * shards + np.arange(shards, dtype=np.int32)
        view, tags = self.env_params_view(env_params)
        out_layout = _replace_tag(self.pieces.state_layout, None)
        init_shard = functools.partial(_init_shard, self.env, self.pieces.init, run_seeds, shards)
        mapped = self.layout.map(init_shard, (SEED, SHARD, SHARED, tags, SEED), out_layout)
        hparams = jax.tree.map(jnp.asarray, self.member_hparams)
        state = mapped(seed_keys, jnp.asarray(parts), k_env, view, hparams)
        return state.replace(env_params=env_params)

    def run_iterations(self, state: Any, num_iterations: jax.Array) -> tuple[Any, dict]:
        """``num_iterations`` iterations of every shard, and the run's reduced metrics."""
        params = state.env_params
        view, tags = self.env_params_view(params)
        state = state.replace(env_params=view)
        tags = _replace_tag(self.pieces.state_layout, tags)
        shard_run = functools.partial(_shard_run, self.pieces.iteration, self.metric_names)
        state, totals = self.layout.map(shard_run, (tags, SHARED), (tags, SHARD))(
            state, num_iterations
        )
        metrics = reduced_metrics(totals, state, self.metric_names, self.layout.num_seeds)
        if self.layout.mesh is not None:  # readable by every process
            metrics = jax.lax.with_sharding_constraint(metrics, self.layout.replicated)
        return state.replace(env_params=params), metrics

    @functools.cached_property
    def run_program(self) -> Any:
        """The compiled training loop (at the pieces' CPU level, if they set one)."""
        level = self.pieces.run_cpu_level
        run_iterations = self.run_iterations
        return jax.jit(run_iterations) if level is None else FastCompile(run_iterations, level)

    def run(self, state: Any, num_steps: int) -> tuple[Any, dict[str, jax.Array]]:
        """Train for exactly ``num_steps`` environment steps per seed (see :class:`Agent`)."""
        unit, unit_name = self.pieces.steps_per_iteration, self.pieces.unit_name
        iterations = check_budget(num_steps, unit, "num_steps", unit_name)
        # Params edited between runs (a curriculum) may hold numpy scalars; as device arrays
        # they match the compiled signature, so nothing compiles again.
        state = state.replace(env_params=jax.tree.map(jnp.asarray, state.env_params))
        return self.run_program(state, jnp.asarray(iterations, jnp.int32))

    @functools.cached_property
    def fast_init(self) -> FastCompile:
        """The compiled ``init`` (at CPU level 0: it runs once)."""
        return FastCompile(self.init_global, cpu_level=0)

    def params_for_init(self, env_params: Any) -> Any:
        """``env_params`` (the defaults for ``None``) as arrays, as ``init`` takes them.

        The defaults and the same values given explicitly then make one program.
        """
        given = self.env.default_params if env_params is None else env_params
        return jax.tree.map(jnp.asarray, given)

    def init_members(self, key: PRNGKey, env_params: Any = None) -> Any:
        """Every member's training state from the run's ``key`` (see :class:`Agent`)."""
        return self.fast_init(key, self.params_for_init(env_params))

    def warmup(
        self, evaluations: Sequence[int] = (), env_params: Any = None, init: bool = True,
        compiling: Callable[[int], Any] | None = None,
    ) -> int:  # fmt: skip
        """Compile ``init``, ``run`` and the given evaluations before they are first called.

        The programs are lowered for the state ``init`` will build (from ``jax.eval_shape``,
        nothing runs) and compiled on one thread each: tracing takes turns on Python's lock,
        but XLA compiles without it, so on a multi-core machine the compilations overlap.
        Later calls with states of that structure
        (from ``init``, ``run`` or a restored checkpoint) start without compiling.

        Args:
            evaluations: Numbers of episodes to compile ``evaluate`` for (one program per
                number, for both the deterministic and the stochastic policy).
            env_params: The environment params ``init`` will be called with (``None``: the
                defaults); ``init`` compiles for their shapes, so others compile it again.
            init: Compile ``init`` too (a run restored from a checkpoint never calls it).
            compiling: Called with the number of programs before they compile (a progress
                display); ``None``: nothing.

        Returns:
            The number of programs compiled (or read from the persistent compilation cache).
        """
        programs = [self.evaluate_program(e) for e in dict.fromkeys(evaluations)]
        key = jax.eval_shape(lambda: jax.random.key(0))
        params = jax.eval_shape(self.params_for_init, env_params)
        state = jax.eval_shape(self.init_global, key, params)
        if self.layout.mesh is not None:  # as placed on the devices, or the first call compiles
            state = jax.tree.map(
                lambda leaf, sharding: jax.ShapeDtypeStruct(
                    leaf.shape, leaf.dtype, sharding=sharding
                ),
                state,
                self.layout.shardings(self.pieces.state_layout, state),
            )
        iterations = jax.ShapeDtypeStruct((), jnp.int32)
        jobs = [lambda: self.run_program.lower(state, iterations).compile()]
        if init:
            jobs.append(lambda: self.fast_init.lower(key, params).compile())
        flag = jax.ShapeDtypeStruct((), jnp.bool_)
        jobs += [
            functools.partial(lambda p: p.lower(state, key, flag).compile(), p) for p in programs
        ]
        return compile_side_by_side(jobs, compiling)

    def with_budget(self, state: Any, total_steps: int) -> Any:
        """The pieces' ``with_budget``, its new state placed as the layout places a state.

        Whatever devices the agent built its new leaves on: agents never name a device.
        """
        new = self.pieces.with_budget(state, total_steps)
        if self.layout.mesh is None:
            return new
        return jax.tree.map(_placed, new, self.layout.shardings(self.pieces.state_layout, new))


def _init_shard(
    env: VecEnv, init: Callable[..., Any], run_seeds: int, shards: int,
    seed_key: PRNGKey, part: jax.Array, k_env: PRNGKey, params: Any, hparams: Any,
) -> Any:  # fmt: skip
    """One seed's shard, fresh: its environments reset as part ``part`` of the run's."""
    k_params, chain = jax.random.split(seed_key)
    if shards > 1:
        chain = jax.random.fold_in(chain, part % shards)
    env_state, ts = env.reset(k_env, params, part=part, num_parts=run_seeds * shards)
    start = ShardStart(chain, env_state, ts.obs, params, part % shards)
    return init(k_params, start, hparams).replace(env_params=None)


def _shard_run(
    iteration: Callable[[Any], tuple[Any, dict]], metric_names: tuple[str, ...],
    state: Any, num_iterations: jax.Array,
) -> tuple[Any, dict]:  # fmt: skip
    """One shard's loop, mapped whole rather than iteration by iteration, and its totals.

    A single seed and shard then lose their batch axis once, outside the loop: a reshape at
    every iteration made XLA copy the replay buffer each time.
    """
    names = ("episodes", "return_sum", "learned", *metric_names)
    totals = {k: jnp.zeros((), jnp.int32 if k == "episodes" else jnp.float32) for k in names}

    def body(_: jax.Array, carry: tuple) -> tuple:
        state, totals = carry
        state, metrics = iteration(state)
        learned = jnp.asarray(metrics.get("learned", True)).astype(jnp.float32)
        added = {
            "episodes": metrics["episodes"],
            "return_sum": metrics["return_sum"],
            "learned": learned,
            **{k: jnp.where(learned > 0, metrics[k], 0.0) for k in metric_names},
        }
        return state, jax.tree.map(jnp.add, totals, added)

    return jax.lax.fori_loop(0, num_iterations, body, (state, totals))


def reduced_metrics(
    totals: dict, state: Any, metric_names: tuple[str, ...], num_seeds: int
) -> dict[str, jax.Array]:
    """A run's metrics from every shard's totals ``(num_seeds, num_shards)``, once per run.

    Sums of episodes, means of the rest, and whether each seed is still finite.
    """
    episodes = totals["episodes"].sum(axis=1)
    return_sum = totals["return_sum"].sum(axis=1)
    count = jnp.maximum(totals["learned"], 1.0)
    means = {k: (totals[k] / count).mean(axis=1) for k in metric_names}
    finite = _all_finite(state.params, num_seeds)
    for k in metric_names:
        finite &= jnp.isfinite(means[k])
    return {
        "episodes": episodes,
        "episode_return": return_sum / jnp.maximum(episodes, 1).astype(jnp.float32),
        **means,
        "finite": finite,
        "env_steps": state.env_steps,
    }


def _placed(leaf: Any, sharding: Any) -> Any:
    """``leaf`` on ``sharding``: as it is where it already lies there.

    Otherwise it is built from its host value on every process: a leaf an agent computed
    from its configuration, the same on all of them (``device_put`` cannot place an array
    on another process's devices).
    """
    if leaf.sharding.is_equivalent_to(sharding, leaf.ndim):
        return leaf
    host = np.asarray(leaf)
    return jax.make_array_from_callback(host.shape, sharding, lambda index: host[index])


def _replace_tag(state_layout: Any, env_params_layout: Any) -> Any:
    """The state layout with its :data:`ENV_PARAMS` subtree replaced by ``env_params_layout``."""
    return state_layout.replace(env_params=env_params_layout)


def _all_finite(tree: Any, num_seeds: int) -> jax.Array:
    """Bool ``(num_seeds,)``: every floating leaf (leading seed axis) is finite."""
    finite = jnp.ones((num_seeds,), bool)
    for leaf in jax.tree.leaves(tree):
        if jnp.issubdtype(leaf.dtype, jnp.floating):
            finite &= jnp.isfinite(leaf.reshape(num_seeds, -1)).all(axis=1)
    return finite


def seed_policy(policy: Policy, state_layout: Any, num_seeds: int) -> Policy:
    """Every seed's policy at once from the agent's one-seed policy.

    The one-seed policy sees its seed's slice of the state (its shards' leaves keep their
    shard axis; the environment params are whole) and observations ``(B, ...)``.
    """

    def init_carry(state: Any, batch: int) -> Any:
        one = lambda s: policy.init_carry(s, batch)  # noqa: E731
        return map_seeds(one, num_seeds, (state_layout,))(state)

    def act(
        state: Any, obs: Any, carry: Any, first: jax.Array, key: PRNGKey, deterministic: bool
    ) -> tuple[jax.Array, Any]:
        def one(s: Any, o: Any, c: Any, f: jax.Array, k: PRNGKey) -> tuple:
            return policy.act(s, o, c, f, k, deterministic)

        keys = jax.random.split(key, num_seeds)
        layouts = (state_layout, SEED, SEED, SEED, SEED)
        return map_seeds(one, num_seeds, layouts)(state, obs, carry, first, keys)

    return Policy(init_carry=init_carry, act=act)
