"""The interface every agent implements, and the driver that turns it into ``init``/``run``.

An algorithm provides a few pure pieces, written for one seed on one shard of its
environments (docs/design.md §5):

- ``hyperparams(config) -> hparams``: one seed's hyperparameters held as data (a pytree
  of numbers) for a configuration; the layer evaluates it for each member of a sweep.
- ``init(key, start, hparams) -> state``: the shard's whole training state from the seed's
  key, the shard's :class:`ShardStart` (its environments, key chain and params) and the
  member's hyperparameters (float32 ``()`` leaves). Every agent's state has ``params`` (what
  the NaN guard checks), ``env_params``, ``env_steps`` and ``updates`` (int32 ``()``
  counters).
- ``iteration(state) -> (state, metrics)``: one step of its loop, advancing the seed by
  ``steps_per_iteration`` environment steps (PPO: a rollout and its update; an off-policy
  agent: one vectorized step and its gradient steps); its gradient steps go through
  :class:`~rollax.training.GradientStep`, which averages over the seed's shards.
- the state's layout: which parts are per seed, per shard or shared.
- a one-seed :class:`Policy` that acts for evaluation and video, threading a recurrent carry.
- ``metric_names``: the means its iterations report, beyond the episode counts.
- ``with_budget(state, total_steps)``: what a new budget changes on resume (every agent
  stretches its learning-rate schedule, DQN its exploration schedule too).

:func:`build_agent` takes them as one :class:`AgentPieces`, maps them over the members of
the state's seed axis (seeds, and with a sweep each grid point's seeds: see
:mod:`rollax.training`'s sweeps) and over shards, places them on devices, and turns them into
an :class:`Agent`: ``run(state, num_steps)`` runs exactly ``num_steps`` environment steps
per seed in one compiled loop whose length is data (no second compile), reduces the metrics
once, and flags seeds whose parameters or losses are no longer finite; ``evaluate`` plays
whole episodes with the shared evaluator; ``warmup`` compiles everything side by side.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rollax._compile import FastCompile
from rollax._struct import pytree_dataclass
from rollax.envs import VecEnv
from rollax.training._evaluate import make_evaluator
from rollax.training._layout import (
    SEED,
    SHARD,
    SHARED,
    Layout,
    make_layout,
    map_seeds,
)
from rollax.training._optim import GradientStep
from rollax.training._policy import Policy, feedforward_policy
from rollax.types import PRNGKey

__all__ = [
    "EPISODE_METRICS",
    "Agent",
    "AgentPieces",
    "Policy",
    "ShardStart",
    "build_agent",
    "check_budget",
    "feedforward_policy",
    "gradient_step_for",
    "layout_for",
]

EPISODE_METRICS = ("episodes", "return_sum")
"""Per-seed sums every iteration reports: episodes that ended, and the sum of their returns
(int32 and float32 ``(num_seeds,)``). ``run`` turns them into ``episodes`` and
``episode_return`` (their mean, 0 where none ended)."""


@dataclasses.dataclass(frozen=True, eq=False)
class Agent:
    """An agent as users and the training layer drive it.

    Attributes:
        name: The algorithm's registered name (``"ppo"``).
        config: Its configuration (a frozen dataclass with ``total_steps`` and
            ``num_seeds``).
        env: One shard's training environments: ``num_envs // num_shards`` in a batch.
        init: ``(key, env_params=None) -> state``.
        run: ``(state, num_steps) -> (state, metrics)``: exactly ``num_steps`` environment
            steps per seed, a multiple of ``steps_per_iteration``. Metrics, per seed
            ``(num_seeds,)``: ``episodes`` ended and their mean ``episode_return``, the means
            of ``metric_names``, ``finite`` (parameters and losses all finite); and
            ``env_steps`` so far.
        evaluate: ``(state, key, num_episodes=64, deterministic=True) -> returns``: float32
            ``(num_seeds, num_episodes)`` returns of whole episodes, with the state's
            environment params and episode limit.
        policy: The :class:`Policy` evaluation and video use.
        metric_names: The agent's own metrics (losses and the like), in logging order.
        steps_per_iteration: Environment steps per seed of one iteration: the unit of
            ``run``'s budget.
        with_budget: ``(state, total_steps) -> state`` for a new budget on resume.
        warmup: ``(evaluations=(), env_params=None, init=True) -> None``: compile ``init``
            (for those params; unless ``init`` is False), ``run`` and ``evaluate`` for each
            ``(num_episodes, deterministic)`` side by side before first use.
        layout: Where its seeds and shards sit (:class:`~rollax.training.Layout`).
        state_layout: Its state's layout: a prefix tree of the state with one tag per
            subtree (``"seed"``, ``"shard"``, ``"shared"``, ``"env_params"``).
        to_checkpoint: ``state -> saved``: what a checkpoint keeps of the state (all of it,
            unless the agent leaves something out, e.g. a replay buffer too large to save).
        from_checkpoint: ``saved -> state``: the state again from what was kept (parts left
            out start afresh).
        hyperparams: ``config -> hparams``: one member's hyperparameters held as data for a
            configuration (what population-based training writes back when it explores).
        driver: What the agent's one-seed, one-shard pieces close over, for calling them
            apart (``rollax.agents.onpolicy``, ``rollax.agents.offpolicy``); ``None`` for
            an agent built from pieces of its own.
    """

    name: str
    config: Any
    env: VecEnv
    init: Callable[..., Any]
    run: Callable[[Any, int], tuple[Any, dict[str, jax.Array]]]
    evaluate: Callable[..., jax.Array]
    policy: Policy
    metric_names: tuple[str, ...]
    steps_per_iteration: int
    with_budget: Callable[[Any, int], Any]
    warmup: Callable[..., None]
    layout: Layout
    state_layout: Any
    to_checkpoint: Callable[[Any], Any] = lambda state: state
    from_checkpoint: Callable[[Any], Any] = lambda saved: saved
    hyperparams: Callable[[Any], Any] | None = None
    driver: Any = None

    @property
    def num_seeds(self) -> int:
        """Members trained at once: the size of the state's seed axis.

        ``config.num_seeds``, times the sweep's grid points when the config has a sweep.
        """
        return self.layout.num_seeds

    @property
    def num_train_envs(self) -> int:
        """Training environments of all seeds: ``num_seeds * num_envs``."""
        return self.num_seeds * int(self.config.num_envs)

    def shardings(self, state: Any) -> Any:
        """The ``NamedSharding`` of every leaf of ``state`` (``None`` on one device)."""
        return self.layout.shardings(self.state_layout, state)

    def per_seed(
        self, fn: Callable[..., Any], layouts: Sequence[Any], out_axes: Any = 0
    ) -> Callable[..., Any]:
        """``fn`` of one seed's slice of its arguments, over every seed.

        For an agent's inspection helpers (its Q-values of given observations); ``layouts``
        gives each positional argument's layout (the state's: ``state_layout``).
        """
        return self.layout.per_seed(fn, layouts, out_axes)

    def on_every_shard(self, fn: Callable[[Any], tuple[Any, Any]]) -> Callable[..., Any]:
        """``fn(state) -> (state, out)`` of one shard, run on every seed's shards of a state.

        ``out`` comes back with leading ``(num_seeds, num_shards)`` axes.
        """
        return self.layout.on_every_shard(fn, self.state_layout, self.env, self.config.num_envs)

    def shard_state(self, state: Any, seed: int = 0, shard: int = 0) -> Any:
        """One member's state on one of its shards, as the driver's pieces take it.

        Per-seed leaves lose their ``(num_seeds,)`` axis and per-shard leaves their
        ``(num_seeds, num_shards)`` axes; shared leaves and the environment params stay as
        they are (params with one value per environment keep every seed's).

        Raises:
            ValueError: a ``seed`` or ``shard`` out of range.
        """
        for name, value, count in (("seed", seed, self.num_seeds),
                                   ("shard", shard, self.layout.num_shards)):  # fmt: skip
            if not 0 <= value < count:
                raise ValueError(f"shard_state: {name}={value!r} is not in [0, {count}).")
        cut = {SEED: lambda x: x[seed], SHARD: lambda x: x[seed, shard]}
        return jax.tree.map(
            lambda tag, part: jax.tree.map(cut[tag], part) if tag in cut else part,
            self.state_layout,
            state,
        )


def check_budget(steps: int, unit: int, name: str, unit_name: str) -> int:
    """The number of iterations ``steps`` makes; raise if it is not a whole number.

    Args:
        steps: Environment steps per seed.
        unit: Environment steps per seed of one iteration.
        name: The argument, for the message (``"num_steps"``).
        unit_name: What one iteration is, for the message (``"rollouts of num_envs *
            num_steps"``).

    Raises:
        ValueError: naming the nearest budgets that can be hit exactly.
    """
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"{name} must be a positive integer, got {steps!r}.")
    if steps % unit:
        below = steps // unit * unit
        nearest = [s for s in (below, below + unit) if s > 0]
        raise ValueError(
            f"{name}={steps} is not a whole number of {unit_name} = {unit} environment "
            f"steps, so the budget could not be exact; use "
            f"{' or '.join(map(str, nearest))} (any multiple of {unit})."
        )
    return steps // unit


@pytree_dataclass
class ShardStart:
    """What an agent's ``init`` starts one shard of one seed from (built by the layer).

    Attributes:
        key: The shard's own key chain (sampling actions, minibatches, replay): the seed's
            with one shard, a child of it per shard with several.
        env_state: The shard's environments, just reset (leading axis ``num_envs //
            num_shards``).
        obs: Their first observations.
        env_params: The shard's view of the environment params.
        shard: int32 ``()``: the shard's index among its seed's ``num_shards``.
    """

    key: PRNGKey
    env_state: Any
    obs: Any
    env_params: Any
    shard: jax.Array


def _all_finite(tree: Any, num_seeds: int) -> jax.Array:
    """Bool ``(num_seeds,)``: every floating leaf (leading seed axis) is finite."""
    finite = jnp.ones((num_seeds,), bool)
    for leaf in jax.tree.leaves(tree):
        if jnp.issubdtype(leaf.dtype, jnp.floating):
            finite &= jnp.isfinite(leaf.reshape(num_seeds, -1)).all(axis=1)
    return finite


def _seed_policy(policy: Policy, state_layout: Any, num_seeds: int) -> Policy:
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


@dataclasses.dataclass(frozen=True)
class AgentPieces:
    """An algorithm's pure pieces, written for one seed on one shard, for :func:`build_agent`.

    The on-policy and off-policy drivers of :mod:`rollax.agents` build these from a learner;
    an algorithm with a loop of its own gives them directly.
    """

    state_layout: Any
    """The state's layout: a prefix tree of the state with a tag per subtree (:data:`SEED`,
    :data:`SHARD`, :data:`SHARED`, :data:`ENV_PARAMS`)."""
    hyperparams: Callable[[Any], Any]
    """``config -> hparams``: one seed's hyperparameters held as data, a pytree of numbers,
    for a configuration (called on each member's configuration; the fields they depend on
    are the config class's ``SWEEPABLE``)."""
    init: Callable[[PRNGKey, ShardStart, Any], Any]
    """``(key, start, hparams) -> state`` of one seed's shard: ``key`` the seed's (the same on
    all its shards: per-seed leaves must come from it alone), ``start`` the shard's
    :class:`ShardStart`, ``hparams`` the member's ``hyperparams`` as float32 ``()`` leaves."""
    iteration: Callable[[Any], tuple[Any, dict[str, jax.Array]]]
    """``state -> (state, metrics)`` of one shard; metrics are scalars: :data:`EPISODE_METRICS`
    (this shard's), ``metric_names``, and optionally ``learned`` (bool: the metrics count in
    the mean; absent: always)."""
    steps_per_iteration: int
    """Environment steps per seed of one iteration."""
    unit_name: str
    """What one iteration is, for budget errors (e.g. "rollouts of num_envs * num_steps")."""
    metric_names: Sequence[str]
    """The agent's own metrics."""
    policy: Policy
    """Its one-seed policy for evaluation and video (observations ``(B, ...)``)."""
    with_budget: Callable[[Any, int], Any]
    """``(state, total_steps) -> state``: its resume hook for a new budget (on the global
    state)."""
    to_checkpoint: Callable[[Any], Any] | None = None
    """What a checkpoint keeps of the state (``None``: all of it)."""
    from_checkpoint: Callable[[Any], Any] | None = None
    """The state again from what a checkpoint kept (``None``: as kept)."""
    driver: Any = None
    """What the pieces close over, handed on as ``Agent.driver`` (``None``: nothing)."""
    run_cpu_level: int | None = None
    """An LLVM optimization level for the training program on CPU (``None``: XLA's default).
    Level 1 compiles the drivers' training programs with less work and runs them as fast;
    level 0 runs them several times slower (the Getting started page's backend table)."""


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
        pieces: The algorithm's pieces (:class:`AgentPieces`).
    """
    if not isinstance(pieces, AgentPieces):
        raise TypeError(f"build_agent: pieces must be an AgentPieces, got {type(pieces).__name__}")
    config = config.with_shards()  # the agent's config records the shards the layout uses
    layout = layout_for(config)
    seed_policy = _seed_policy(pieces.policy, pieces.state_layout, layout.num_seeds)
    evaluate, evaluate_program = make_evaluator(
        env, seed_policy, layout.num_seeds, layout.num_seeds * int(config.num_envs),
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
        policy=seed_policy,
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
        evaluate_program: ``(num_episodes, deterministic) -> program`` of the evaluator,
            for :meth:`warmup`.
    """

    config: Any
    env: VecEnv
    pieces: AgentPieces
    layout: Layout
    evaluate_program: Callable[[int, bool], Any]

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
        metrics = _reduced_metrics(totals, state, self.metric_names, self.layout.num_seeds)
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
        self, evaluations: Sequence[tuple[int, bool]] = (), env_params: Any = None,
        init: bool = True,
    ) -> None:  # fmt: skip
        """Compile ``init``, ``run`` and the given evaluations before they are first called.

        The programs are lowered for the state ``init`` will build (from ``jax.eval_shape``,
        nothing runs) and compiled on one thread each: tracing takes turns on Python's lock,
        but XLA compiles without it, so on a multi-core machine the compilations overlap.
        Later calls with states of that structure
        (from ``init``, ``run`` or a restored checkpoint) start without compiling.

        Args:
            evaluations: ``(num_episodes, deterministic)`` pairs to compile ``evaluate`` for.
            env_params: The environment params ``init`` will be called with (``None``: the
                defaults); ``init`` compiles for their shapes, so others compile it again.
            init: Compile ``init`` too (a run restored from a checkpoint never calls it).
        """
        programs = [self.evaluate_program(e, d) for e, d in evaluations]
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
        jobs += [functools.partial(lambda p: p.lower(state, key).compile(), p) for p in programs]
        with concurrent.futures.ThreadPoolExecutor(len(jobs)) as pool:
            for future in [pool.submit(job) for job in jobs]:
                future.result()

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


def _reduced_metrics(
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


def gradient_step_for(config: Any) -> GradientStep:
    """The gradient step an agent's configuration trains with.

    The mean over each seed's shards, as its layout (:func:`layout_for`) places them.
    """
    layout = layout_for(config)
    return GradientStep(mean=layout.mean, num_shards=layout.num_shards)


def layout_for(config: Any) -> Layout:
    """The layout of an agent's configuration: its members, ``num_shards`` and ``devices``.

    Members are ``num_seeds`` seeds of each of the sweep's grid points.
    """
    shards = config.with_shards().num_shards
    return make_layout(int(config.num_members), int(shards), config.devices)
