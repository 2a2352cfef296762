"""What the agents of continuous actions share (SAC, TD3).

The box they act in, how they explore in it (``explore_in_box``), and the correlated noise
they may explore with.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from rollax.agents._offpolicy import (
    LAYOUT,
    OffPolicyLearner,
    OffPolicyState,
    feedforward_act,
    feedforward_explore,
    observe_for_policy,
)
from rollax.envs import VecEnv
from rollax.spaces import Box, is_image_key
from rollax.training import SEED, Agent, GradientStep, Optimizer, ShardStart, stretch_schedule
from rollax.types import PRNGKey

__all__ = [
    "ActionBox",
    "BoxParts",
    "RedNoise",
    "action_box",
    "box_learner",
    "critic_values",
    "explore_in_box",
    "image_shapes",
    "member_hyperparams",
    "network_settings",
    "red_noise",
    "stretch_learner_schedule",
]


class ActionBox(NamedTuple):
    """A bounded 1-D box of actions.

    Attributes:
        low: float32 ``(action_dim,)``: the lower bounds (a numpy array, a constant of the
            programs).
        high: float32 ``(action_dim,)``: the upper bounds.
    """

    low: np.ndarray
    high: np.ndarray

    @property
    def dim(self) -> int:
        """Action dimensions."""
        return int(self.low.shape[0])

    def uniform(self, key: PRNGKey, shape: tuple[int, ...]) -> jax.Array:
        """float32 actions of ``shape`` (``(..., action_dim)``), uniform in the box."""
        low, high = self.bounds(shape)
        return jax.random.uniform(key, shape, jnp.float32, low, high)

    def bounds(self, shape: tuple[int, ...]) -> tuple[jax.Array, jax.Array]:
        """``(low, high)`` broadcast to actions of ``shape`` (``(..., action_dim)``)."""
        return jnp.broadcast_to(self.low, shape), jnp.broadcast_to(self.high, shape)

    def scale(self, unit: jax.Array) -> jax.Array:
        """Actions in ``[-1, 1]`` (a ``tanh`` output) moved to the box."""
        low, high = self.bounds(unit.shape)
        return low + 0.5 * (unit + 1.0) * (high - low)

    def clip(self, action: jax.Array) -> jax.Array:
        """``action`` clipped into the box."""
        return jnp.clip(action, *self.bounds(action.shape))

    def noise(self, key: PRNGKey, shape: tuple[int, ...], scale: jax.Array) -> jax.Array:
        """Gaussian noise of ``scale`` half ranges of each action, float32 ``shape``."""
        return self.spread(jax.random.normal(key, shape, jnp.float32), scale)

    def spread(self, unit: jax.Array, scale: jax.Array) -> jax.Array:
        """Standard normal ``unit`` noise (``(..., action_dim)``) in ``scale`` half ranges."""
        low, high = self.bounds(unit.shape)
        return unit * scale * 0.5 * (high - low)


class RedNoise(NamedTuple):
    """Exploration noise correlated in time (red noise).

    For each environment and action dimension an AR(1) process
    ``x' = rho * x + sqrt(1 - rho**2) * e`` with ``e ~ N(0, 1)``, whose marginal stays the
    standard normal. The state is the last noise of each of a shard's environments, float32
    ``(num_envs // num_shards, action_dim)`` (``OffPolicyState.exploration``).

    Attributes:
        correlation: ``rho``, in (0, 1).
        shape: ``(num_envs // num_shards, action_dim)``.
        sharded: Whether the seed's environments are split over shards (each shard then
            draws its own first noise).
    """

    correlation: float
    shape: tuple[int, int]
    sharded: bool

    def init(self, key: PRNGKey, start: ShardStart) -> jax.Array:
        """A shard's first noise, from the learner's key (and the shard's index)."""
        key = jax.random.fold_in(key, 1)
        if self.sharded:
            key = jax.random.fold_in(key, start.shard)
        return jax.random.normal(key, self.shape, jnp.float32)

    def advance(self, noise: jax.Array, key: PRNGKey) -> jax.Array:
        """The next step's noise, float32 like ``noise``."""
        fresh = jax.random.normal(key, noise.shape, jnp.float32)
        rho = self.correlation
        return rho * noise + math.sqrt(1.0 - rho**2) * fresh


def red_noise(config: Any, env: VecEnv, box: ActionBox) -> RedNoise | None:
    """The correlated noise of ``config.exploration_correlation`` for one shard's ``env``.

    ``None`` at 0: independent noise, and no exploration state.
    """
    if config.exploration_correlation <= 0:
        return None
    return RedNoise(config.exploration_correlation, (env.num_envs, box.dim), config.num_shards > 1)


def explore_in_box(
    config: Any, box: ActionBox, red: RedNoise | None, from_noise: Any, sample: Any
) -> Any:
    """An agent's off-policy ``explore``, in the box.

    ``(learner, exploration, obs, key, env_steps) -> (action, exploration)``. With ``red``
    (``exploration_correlation``): the noise in ``exploration`` is advanced one AR(1) step and
    the action is ``from_noise(learner, obs, noise)``, from the first step. Otherwise:
    ``sample(learner, obs, key)`` once ``env_steps`` (per seed) reaches
    ``config.learning_starts``, uniform actions in the box before (``exploration`` stays
    ``None``).
    """

    def explore(
        learner: Any, exploration: Any, obs: Any, key: PRNGKey, env_steps: jax.Array
    ) -> tuple:
        if red:
            exploration = red.advance(exploration, key)
            return from_noise(learner, obs, exploration), exploration
        k_sample, k_uniform = jax.random.split(key)
        action = sample(learner, obs, k_sample)
        uniform = box.uniform(k_uniform, action.shape)
        return jnp.where(env_steps < config.learning_starts, uniform, action), exploration

    return explore


def action_box(who: str, env: VecEnv, other: str) -> ActionBox:
    """The box ``env`` acts in, or a ``ValueError`` naming what is wrong with its actions.

    Args:
        who: The agent, for messages (``"make_sac: SAC"``).
        env: One shard's environments.
        other: What to use for discrete actions, for the message.
    """
    space = env.action_space
    if not isinstance(space, Box) or len(space.shape) != 1:
        raise ValueError(
            f"{who} acts in a 1-D box of continuous actions; {env.env_id} has {space!r}. "
            f"Use {other} for discrete actions."
        )
    # numpy, not jax: checked here without compiling (each eager jax operation is a program)
    low = np.broadcast_to(np.asarray(space.low, np.float32), space.shape).copy()
    high = np.broadcast_to(np.asarray(space.high, np.float32), space.shape).copy()
    if not (np.isfinite(low).all() and np.isfinite(high).all() and (high > low).all()):
        raise ValueError(
            f"{who} keeps actions inside their bounds, so they must be finite with low < "
            f"high; {env.env_id} has {space!r}."
        )
    return ActionBox(low, high)


def image_shapes(obs_spec: Any) -> dict[str, tuple[int, ...]] | None:
    """``(H, W, C)`` of each image entry of a dict observation's spec (``None``: a vector)."""
    if not isinstance(obs_spec, dict):
        return None
    return {k: s.shape for k, s in obs_spec.items() if is_image_key(k)}


def network_settings(config: Any, obs_spec: Any) -> dict[str, Any]:
    """What an agent's actor and critics share, as their modules' keyword arguments.

    The MLP's widths and activation, and the image encoders of dict observations.
    """
    return dict(
        hidden_sizes=tuple(config.hidden_sizes),
        activation=config.activation,
        image_shapes=image_shapes(obs_spec),
        layer_norm=config.encoder_layer_norm,
    )


def member_hyperparams(cls: type, member: Any) -> Any:
    """One seed's ``cls`` hyperparameters for a member's configuration (Python numbers).

    The optimizer's, scheduled over the member's gradient steps, and the member's fields of
    ``cls``'s other names (:meth:`~rollax.training.OptimizerHyperParams.of`).
    """
    return cls.of(member, member.gradient_steps_in(member.total_steps))


@dataclasses.dataclass(frozen=True, eq=False)
class BoxParts:
    """What an agent of box actions (SAC, TD3) keeps for its pieces, for one shard.

    A subclass gives its pieces as methods, each callable on one seed's learner:
    ``init(key, hparams)``, ``learn(learner, batch, weight, key)``, ``act(learner, obs, key,
    deterministic)``, and for exploring in the box ``moved(learner, obs, noise)`` and
    ``sampled(learner, obs, key)``; :func:`box_learner` wires them. ``HyperParams`` is its
    :class:`~rollax.training.OptimizerHyperParams` subclass, which :meth:`hyperparams` fills
    from a member's configuration unless the subclass computes some of it.

    Attributes:
        config: The configuration.
        box: The action box.
        actor: The actor module.
        critic: The twin critics (:class:`~rollax.networks.DoubleQ`).
        optimizer: The static parts of the optimizer.
        step: The layer's gradient step.
        obs_spec: One observation's shapes and dtypes.
    """

    HyperParams: ClassVar[type]
    config: Any
    box: ActionBox
    actor: Any
    critic: Any
    optimizer: Optimizer
    step: GradientStep
    obs_spec: Any

    def hyperparams(self, member: Any) -> Any:
        """One seed's hyperparameters for a member's configuration (Python numbers)."""
        return member_hyperparams(self.HyperParams, member)


def box_learner(
    config: Any, box: ActionBox, red: RedNoise | None, parts: BoxParts, metric_names: Sequence[str]
) -> OffPolicyLearner:
    """The :class:`~rollax.agents.OffPolicyLearner` of an agent of box actions (SAC, TD3).

    Its pieces are ``parts``' methods (:class:`BoxParts`). The learning-rate schedule
    stretches to a new budget, and the correlated noise (``red``) is the exploration state.
    """
    return OffPolicyLearner(
        obs_spec=parts.obs_spec,
        hyperparams=parts.hyperparams,
        init=parts.init,
        explore=feedforward_explore(explore_in_box(config, box, red, parts.moved, parts.sampled)),
        learn=parts.learn,
        metric_names=tuple(metric_names),
        act=feedforward_act(parts.act),
        with_budget=stretch_learner_schedule(config),
        init_exploration=red.init if red else None,
    )


def critic_values(agent: Agent, critic: Any, normalize_obs: bool, values: Any = lambda q: q) -> Any:
    """``(state, obs, action) -> q``: every seed's twin critics, for inspection.

    float32 ``(num_seeds, 2, B)`` for raw observations ``(num_seeds, B, ...)`` and actions
    ``(num_seeds, B, action_dim)``; ``critic`` is the :class:`~rollax.networks.DoubleQ`
    module whose parameters are ``state.learner.params["critic"]``, and ``values`` turns its
    outputs into values (a distributional critic's expectations).
    """

    def one_seed(state: OffPolicyState, obs: Any, action: jax.Array) -> jax.Array:
        seen = observe_for_policy(state, obs, normalize_obs)
        return values(critic.apply(state.learner.params["critic"], seen, action))

    return jax.jit(agent.per_seed(one_seed, (LAYOUT, SEED, SEED)))


def stretch_learner_schedule(config: Any) -> Any:
    """An off-policy agent's ``with_budget``: ``(state, total_steps) -> state``.

    The learner's learning-rate schedule stretched to the gradient steps of the new budget.
    """

    def with_budget(state: OffPolicyState, total_steps: int) -> OffPolicyState:
        hp = stretch_schedule(state.learner.hparams, config.gradient_steps_in(total_steps))
        return state.replace(learner=state.learner.replace(hparams=hp))

    return with_budget
