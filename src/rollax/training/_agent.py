"""The interface every agent implements: its pieces, and the Agent they compose into.

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

:func:`~rollax.training.build_agent` takes them as one :class:`AgentPieces`, maps them over
the members of the state's seed axis (seeds, and with a sweep each grid point's seeds: see
:mod:`rollax.training`'s sweeps) and over shards, places them on devices, and turns them into
an :class:`Agent`: ``run(state, num_steps)`` runs exactly ``num_steps`` environment steps
per seed in one compiled loop whose length is data (no second compile), reduces the metrics
once, and flags seeds whose parameters or losses are no longer finite; ``evaluate`` plays
whole episodes with the shared evaluator; ``warmup`` compiles everything side by side.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import jax

from rollax._struct import pytree_dataclass
from rollax.envs import VecEnv
from rollax.training._layout import (
    SEED,
    SHARD,
    Layout,
    make_layout,
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
        warmup: ``(evaluations=(), env_params=None, init=True, compiling=None) -> int``:
            compile ``init`` (for those params; unless ``init`` is False), ``run`` and
            ``evaluate`` for each number of episodes (both policies in one program) side by
            side before first use; ``compiling(n)`` is called first with the number of
            programs, and the number is returned.
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
    warmup: Callable[..., int]
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


@dataclasses.dataclass(frozen=True)
class AgentPieces:
    """An algorithm's pure pieces, one seed on one shard (:func:`~rollax.training.build_agent`).

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
