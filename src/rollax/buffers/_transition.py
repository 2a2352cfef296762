"""Replay of single transitions: a :class:`SequenceBuffer` of one-step sequences."""

from __future__ import annotations

import dataclasses

import jax

from rollax.buffers._common import BufferSample
from rollax.buffers._trajectory import BufferState, SequenceBuffer
from rollax.types import PRNGKey, PyTree


@dataclasses.dataclass(frozen=True)
class TransitionBuffer:
    """Replay of single transitions from ``num_envs`` environments.

    Store :class:`Transition` items (``next_obs`` is the true successor, the ``final_obs``
    at an episode end) or any pytree. ``sample`` returns leaves ``(batch_size, ...)``. The
    same pure functions and in-place ``add`` as :class:`SequenceBuffer`::

        buffer = TransitionBuffer(capacity=1_048_576, num_envs=256)
        state = buffer.init(Transition.from_step(obs[0], action[0], timestep_of_one_env))
        add = jax.jit(buffer.add, donate_argnums=0)
        state = add(state, Transition.from_step(obs, action, timestep))  # leaves (256, ...)
    """

    capacity: int
    """Transitions stored in all, over all environments; a multiple of ``num_envs``."""
    num_envs: int
    """Environments adding a transition each per ``add``."""
    prioritized: bool = False
    """Sample in proportion to ``priority ** priority_exponent`` (sum tree)."""
    priority_exponent: float = 0.6
    """The exponent alpha applied to priorities (0 is uniform)."""
    priority_epsilon: float = 1e-6
    """Added to every priority so that no stored transition has probability zero."""
    compact: bool = False
    """Store every observation once (items: :class:`Transition` or a dict with ``obs``,
    ``next_obs``, ``terminated``, ``truncated``, added as consecutive steps of each
    environment). Sampled ``next_obs`` is exactly the added one, episode ends included; the
    final observations at episode ends are kept on the side (``final_obs_slots``)."""
    final_obs_slots: int | None = None
    """``compact`` only: final observations kept per environment (``None``:
    ``max(1, steps_per_env // 64)``); a step that ended an episode is no longer sampled once
    its final observation has been pushed out."""

    def __post_init__(self) -> None:
        self._sequences  # noqa: B018  (validates the arguments)

    @property
    def _sequences(self) -> SequenceBuffer:
        return SequenceBuffer(
            capacity=self.capacity,
            num_envs=self.num_envs,
            prioritized=self.prioritized,
            priority_exponent=self.priority_exponent,
            priority_epsilon=self.priority_epsilon,
            compact=self.compact,
            final_obs_slots=self.final_obs_slots,
        )

    @property
    def slots(self) -> int:
        """Final observations kept per environment by a compact buffer (0 otherwise)."""
        return self._sequences.slots

    def init(self, example_item: PyTree) -> BufferState:
        """An empty buffer for items shaped like ``example_item`` (one step of one env)."""
        return self._sequences.init(example_item)

    def add(self, state: BufferState, item: PyTree) -> BufferState:
        """Append one step, leaves ``(num_envs, ...)``, or ``n``, ``(num_envs, n, ...)``."""
        return self._sequences.add(state, item)

    def sample(
        self, state: BufferState, key: PRNGKey, batch_size: int, beta: float = 0.4
    ) -> BufferSample:
        """Draw ``batch_size`` transitions: item leaves ``(batch_size, ...)``."""
        out = self._sequences.sample(state, key, batch_size, beta)
        return out.replace(item=jax.tree.map(lambda x: x[:, 0], out.item), mask=out.mask[:, 0])

    def can_sample(self, state: BufferState) -> jax.Array:
        """Whether at least one transition is stored: bool ``()``."""
        return self._sequences.can_sample(state)

    def size(self, state: BufferState) -> jax.Array:
        """int32 ``()``: transitions stored (at most ``capacity``)."""
        return self._sequences.size(state)

    def update_priorities(
        self, state: BufferState, index: jax.Array, priority: jax.Array
    ) -> BufferState:
        """Set the priorities of the transitions at ``index`` (``BufferSample.index``)."""
        return self._sequences.update_priorities(state, index, priority)


__all__ = ["TransitionBuffer"]
