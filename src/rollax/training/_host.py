"""The composition of an algorithm's pieces into an agent whose environments step on the host.

:func:`build_host_agent` is :func:`~rollax.training.build_agent`'s counterpart for the
environments of :mod:`rollax.host`. It takes the same :class:`AgentPieces` (state, layout,
``init``, policy, checkpoint hooks) and gives the same :class:`Agent`, with the same state
and metrics, so run directories, checkpoints, resumes and the command line work unchanged.
Its loop, though, is Python: each iteration steps the host's environments between compiled
programs of every member, which a :class:`HostIteration` (the on-policy or the off-policy
driver's) supplies in place of the pieces' ``iteration``.

Every member has a shard of its own (``num_shards`` is 1) and the members sit on one device;
the state's environments (``env_state``) are ``()``, since the host holds them, and its
environment params an empty :class:`~rollax.host.HostParams`. A Gymnasium environment's state
cannot be saved, so a restored state restarts the episodes that were running, from seeds
drawn from the checkpoint: two resumes of one checkpoint start the same episodes. The metric
:data:`RESTARTED` marks the break: the first ``run`` after a restore reports the episodes it
cut (``num_envs`` per member), every other ``run`` 0.
"""

from __future__ import annotations

import abc
import dataclasses
import functools
import sys
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rollax._compile import compile_side_by_side
from rollax.host import HostParams, MemberEnvs, host_seed, member_rows
from rollax.training._agent import Agent, AgentPieces, ShardStart, check_budget, layout_for
from rollax.training._compose import reduced_metrics, seed_policy
from rollax.training._host_evaluate import host_evaluator
from rollax.training._layout import SEED, SHARED, Layout, find_device
from rollax.types import PRNGKey

__all__ = [
    "RESTARTED",
    "HostIteration",
    "HostLoop",
    "apart_from_acting",
    "build_host_agent",
    "host_loop",
]


RESTARTED = "restarted_episodes"
"""The metric of a host agent that marks a restore: the episodes of each member that were
running at the checkpoint and restarted (``num_envs``) in the first ``run`` after it, else 0."""


class HostIteration(abc.ABC):
    """One iteration of a driver on host environments, in two halves that can run apart.

    :meth:`rollout` acts: it steps every member's environments with the programs of an
    *acting state* (:meth:`acting_state`: the part of the state acting reads), on the
    actor's device. :meth:`update` learns from what it collected, on the learner's. The
    loop (:meth:`HostLoop.run`) runs them one after the other, or, with ``acting_lag=1``,
    the next rollout beside the update. Built on a :class:`HostLoop` (its members, layout
    and ``mapped`` programs).
    """

    @abc.abstractmethod
    def acting_state(self, state: Any) -> Any:
        """``state`` without what only the learner reads (the optimizer's state, the replay)."""

    @abc.abstractmethod
    def rollout(self, acting: Any) -> tuple[Any, Any]:
        """One iteration's steps of every member's environments, acting with ``acting``.

        Returns the acting state advanced (its :meth:`advanced` fields) and the batch the
        update takes.
        """

    @abc.abstractmethod
    def advanced(self, acting: Any) -> dict[str, Any]:
        """The fields a rollout advances (observations, carry, key...), from its result."""

    @abc.abstractmethod
    def update(self, state: Any, acted: Any, batch: Any, totals: dict) -> tuple[Any, dict]:
        """Learning from a rollout's ``batch``, compiled: the state and ``totals`` after it.

        ``state`` holds the rollout's :meth:`advanced` fields, ``acted`` is the acting state
        that collected the batch (its parameters bootstrap an on-policy batch), and
        ``totals`` every member's sums ``(members, 1)`` of the iteration metrics (as
        :data:`~rollax.training.EPISODE_METRICS`, ``learned`` and the agent's own, each
        counted only where ``learned``), to which the update adds its own.
        """

    @abc.abstractmethod
    def compile_jobs(self, state: Any, totals: dict[str, Any]) -> list[Callable[[], Any]]:
        """Functions that each compile one of its programs for a state of these shapes."""


def apart_from_acting(learn: Callable[[Any], tuple[Any, Any]], state: Any) -> tuple[Any, Any]:
    """``learn(state)`` with randomness of its own: one member's update beside a rollout.

    With ``acting_lag=1`` the next rollout starts from the key the last one ended with,
    before the update beside it ends. So the update draws from that key folded with a
    constant of its own, and leaves the key to acting.
    """
    out, metrics = learn(state.replace(key=jax.random.fold_in(state.key, _LEARNER_STREAM)))
    return out.replace(key=state.key), metrics


_LEARNER_STREAM = 0x6C6561
"""The constant an update beside a rollout folds into the key (not one that ``split`` uses)."""


@dataclasses.dataclass(frozen=True, eq=False)
class HostLoop:
    """Every member's training on host environments: the parts that do not depend on the driver.

    Attributes:
        config: The agent's configuration.
        envs: Every member's environments on the host.
        pieces: The algorithm's one-member pieces (their ``iteration`` is not used).
        layout: Members on one device, one shard each.
        initial_carry: ``batch -> carry`` of the network at an episode's start (``()`` for
            a feed-forward one).
        actor: The device acting runs on apart from the learner's (``None``: the same).
    """

    config: Any
    envs: MemberEnvs
    pieces: AgentPieces
    layout: Layout
    initial_carry: Callable[[int], Any]
    actor: jax.Device | None = None
    """The device acting runs on apart from the learner's (``None``: the learner's)."""
    restarted: dict[str, int] = dataclasses.field(default_factory=dict)
    """Episodes per member cut by a restore, until the next ``run`` reports them."""

    @property
    def members(self) -> int:
        """Members trained at once."""
        return self.layout.num_seeds

    @functools.cached_property
    def state_layout(self) -> Any:
        """The pieces' state layout, with no environment params."""
        return self.pieces.state_layout.replace(env_params=SHARED)

    @functools.cached_property
    def member_hparams(self) -> Any:
        """Each member's hyperparameters, float32 ``(members,)`` leaves."""
        members = [self.pieces.hyperparams(c) for c in self.config.member_configs()]
        return jax.tree.map(lambda *values: np.asarray(values, np.float32), *members)

    def mapped(
        self, fn: Callable[..., Any], in_layouts: Sequence[Any], out_layout: Any,
        donate: tuple[int, ...] = (),
    ) -> Any:  # fmt: skip
        """``fn`` of one member on its shard, compiled over every member.

        ``donate``: the positions of arguments the program may overwrite (a replay it adds
        to in place, where a copy would cost a whole replay a step).
        """
        return jax.jit(self.layout.map(fn, in_layouts, out_layout), donate_argnums=donate)

    def rows(self, tree: Any) -> Any:
        """The host batch's arrays ``(members * n, ...)`` as ``(members, 1, n, ...)``."""
        return member_rows(tree, self.members)

    # Starting and restarting episodes.

    def _init_member(self, seed_key: PRNGKey, hparams: Any) -> Any:
        """One member's state, as the training layer starts a seed's only shard.

        Its observations are zeros until the host's environments are reset.
        """
        k_params, chain = jax.random.split(seed_key)
        n = self.envs.num_envs
        spec = _observation_spec(self.envs.observation_space)
        obs = jax.tree.map(lambda s: jnp.zeros((n, *s.shape), s.dtype), spec)
        start = ShardStart(chain, (), obs, HostParams(), jnp.zeros((), jnp.int32))
        return self.pieces.init(k_params, start, hparams).replace(env_params=None)

    @functools.cached_property
    def init_program(self) -> Any:
        """``(key, hparams) -> (state, env_key)``: every member's state, compiled."""

        def init(key: PRNGKey, hparams: Any) -> tuple[Any, PRNGKey]:
            run_seeds = int(self.config.num_seeds)
            k_env, k_seeds = jax.random.split(key)
            seed_index = np.arange(self.members) % run_seeds
            seed_keys = jax.random.split(k_seeds, run_seeds)[seed_index]
            out = self.state_layout.replace(env_params=None)
            mapped = self.layout.map(self._init_member, (SEED, SEED), out)
            return mapped(seed_keys, hparams).replace(env_params=HostParams()), k_env

        return jax.jit(init)

    def init(self, key: PRNGKey, env_params: Any = None) -> Any:
        """Every member's state from the run's key, the host's environments reset.

        Environment ``i`` of the host's batch starts from the ``i``-th of
        :func:`rollax.host.episode_seeds` of a seed drawn from ``key``. Traced (the shapes
        of a state, ``jax.eval_shape``), nothing is reset.

        Raises:
            ValueError: ``env_params`` given (host environments take none).
        """
        if env_params is not None and env_params != HostParams():
            raise ValueError(
                f"{self.envs.env_id} steps on the host and takes no env_params; its options "
                "are its constructor's (--env-options)."
            )
        hparams = jax.tree.map(jnp.asarray, self.member_hparams)
        state, k_env = self.init_program(key, hparams)
        if isinstance(k_env, jax.core.Tracer):
            return state
        return self._reset(state, host_seed(k_env))

    def _reset(self, state: Any, seed: int) -> Any:
        """``state`` with every environment in a new episode, seeded from ``seed``."""
        obs = self.envs.host.reset(seed)
        carry = jax.tree.map(
            lambda c: jnp.broadcast_to(c, (self.members, 1, *c.shape)),
            self.initial_carry(self.envs.num_envs),
        )
        first = jnp.ones((self.members, 1, self.envs.num_envs), jnp.bool_)
        return state.replace(obs=jax.tree.map(jnp.asarray, self.rows(obs)), first=first,
                             carry=carry)  # fmt: skip

    def from_checkpoint(self, saved: Any) -> Any:
        """A restored state, its environments in new episodes seeded from the checkpoint.

        The seed is drawn from the first member's key and the steps done, so two resumes of
        one checkpoint start the same episodes.
        """
        state = (self.pieces.from_checkpoint or (lambda s: s))(saved)
        key = jax.random.fold_in(state.key[0, 0], state.env_steps)
        self.restarted[RESTARTED] = self.envs.num_envs
        print(
            f"rollax: {self.envs.env_id} steps on the host, where its environments' state "
            f"cannot be saved: the {self.envs.host.num_envs} episodes running at the "
            f"checkpoint (step {int(state.env_steps)}) restart from seeds drawn from it.",
            file=sys.stderr,
        )
        return self._reset(state, host_seed(key))

    # Training.

    def zero_totals(self) -> dict[str, np.ndarray]:
        """Every member's iteration sums, zero: ``(members, 1)`` each."""
        names = ("episodes", "return_sum", "learned", *self.pieces.metric_names)
        shape = (self.members, 1)
        return {k: np.zeros(shape, np.int32 if k == "episodes" else np.float32)
                for k in names}  # fmt: skip

    @functools.cached_property
    def reduce_program(self) -> Any:
        """``(totals, state) -> metrics``: the run's metrics, as ``Agent.run`` gives them."""
        names = tuple(self.pieces.metric_names)
        return jax.jit(lambda totals, state: reduced_metrics(totals, state, names, self.members))

    def run(self, iteration: HostIteration, state: Any, num_steps: int) -> tuple[Any, dict]:
        """Exactly ``num_steps`` environment steps per member (see :class:`Agent`).

        Each iteration is a rollout, then the update from it. With ``acting_lag=1`` the
        rollout of iteration ``i + 1`` runs beside the update of iteration ``i``, acting with
        the parameters from before that update; the last update ends the call.
        """
        iterations = check_budget(
            num_steps, self.pieces.steps_per_iteration, "num_steps", self.pieces.unit_name
        )
        lagged = self.config.acting_lag > 0
        totals = self.zero_totals()
        acting = iteration.acting_state(state)
        for i in range(iterations):
            end, batch = iteration.rollout(self._to_actor(acting))
            end, batch = self._to_learner((end, batch))
            advanced = iteration.advanced(end)
            before = state
            state, totals = iteration.update(state.replace(**advanced), acting, batch, totals)
            if i + 1 < iterations and lagged:  # the parameters before the update, ready now
                acting = iteration.acting_state(before).replace(**advanced)
            elif i + 1 < iterations:
                acting = iteration.acting_state(state)
        metrics = dict(self.reduce_program(totals, state))
        cut = self.restarted.pop(RESTARTED, 0)
        metrics[RESTARTED] = jnp.full((self.members,), cut, jnp.float32)
        return state, metrics

    def _to_actor(self, tree: Any) -> Any:
        """``tree`` on the actor's device (where it has one of its own)."""
        return tree if self.actor is None else jax.device_put(tree, self.actor)

    def _to_learner(self, tree: Any) -> Any:
        """``tree`` on the learner's device (where the actor has one of its own)."""
        return tree if self.actor is None else jax.device_put(tree, jax.devices()[0])

    def warmup(
        self, iteration: HostIteration, evaluations: Sequence[int] = (), env_params: Any = None,
        init: bool = True, compiling: Callable[[int], Any] | None = None,
    ) -> int:  # fmt: skip
        """Compile the loop's programs side by side before first use (see :class:`Agent`).

        The evaluations' policy compiles at first use, beside the environments it steps.
        """
        key = jax.eval_shape(lambda: jax.random.key(0))
        hparams = jax.tree.map(jnp.asarray, self.member_hparams)
        state, _ = jax.eval_shape(self.init_program, key, hparams)
        totals = jax.eval_shape(self.zero_totals)
        jobs = [
            *iteration.compile_jobs(state, totals),
            lambda: self.reduce_program.lower(totals, state).compile(),
        ]
        if init:
            jobs.append(lambda: self.init_program.lower(key, hparams).compile())
        return compile_side_by_side(jobs, compiling)


def host_loop(
    name: str,
    config: Any,
    envs: MemberEnvs,
    pieces: AgentPieces,
    initial_carry: Callable[[int], Any],
) -> HostLoop:
    """The loop of an agent whose environments step on the host (see the module docstring).

    Args:
        name: The algorithm's registered name.
        config: Its configuration.
        envs: Every member's environments on the host (their ``num_envs`` is one member's).
        pieces: The algorithm's pieces, as :func:`~rollax.training.build_agent` takes them;
            a :class:`HostIteration` replaces their ``iteration``.
        initial_carry: ``batch -> carry`` of the network at an episode's start.

    Raises:
        ValueError: a layout over several devices (host environments train on one), or an
            ``actor_device`` that JAX does not see.
    """
    config = config.with_shards()
    layout = layout_for(config)
    if layout.mesh is not None:
        raise ValueError(
            f"make_{name}: {envs.env_id} steps on the host, and its agents train on one "
            f"device; got devices={config.devices!r}. Set devices=1."
        )
    who = f"make_{name}: {type(config).__name__}.actor_device"
    actor = None if config.actor_device is None else find_device(config.actor_device, who)
    if actor == jax.devices()[0]:
        actor = None
    return HostLoop(config, envs, pieces, layout, initial_carry, actor)


def build_host_agent(
    name: str,
    loop: HostLoop,
    iteration: HostIteration,
    agent_type: type[Agent] = Agent,
    **fields: Any,
) -> Agent:
    """The agent of a :class:`HostLoop` and the driver's :class:`HostIteration`.

    Args:
        name: The algorithm's registered name.
        loop: Its loop (:func:`host_loop`).
        iteration: The driver's iteration on the host.
        agent_type: The agent class to build.
        **fields: Further fields of ``agent_type``.
    """
    pieces, envs, layout = loop.pieces, loop.envs, loop.layout
    policy = seed_policy(pieces.policy, loop.state_layout, layout.num_seeds)
    return agent_type(
        name=name,
        config=loop.config,
        env=envs,
        init=loop.init,
        run=functools.partial(loop.run, iteration),
        evaluate=host_evaluator(envs.remake, envs.env_id, policy, layout.num_seeds),
        policy=policy,
        metric_names=(*pieces.metric_names, RESTARTED),
        steps_per_iteration=int(pieces.steps_per_iteration),
        with_budget=pieces.with_budget,
        warmup=functools.partial(loop.warmup, iteration),
        layout=layout,
        state_layout=loop.state_layout,
        to_checkpoint=pieces.to_checkpoint or (lambda state: state),
        from_checkpoint=loop.from_checkpoint,
        hyperparams=pieces.hyperparams,
        driver=pieces.driver,
        **fields,
    )


def _observation_spec(space: Any) -> Any:
    """One observation's shapes and dtypes (a dict of them for a dict space)."""
    if hasattr(space, "spaces"):
        return {k: _observation_spec(s) for k, s in space.spaces.items()}
    return jax.ShapeDtypeStruct(tuple(space.shape), space.dtype)
