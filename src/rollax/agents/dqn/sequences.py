"""Recurrent DQN's learning on replayed sequences, as R2D2 does it (Kapturowski et al., 2019).

A sampled sequence of ``burn_in + sequence_length`` steps (one environment's consecutive
transitions, possibly across episodes) is replayed from the carry stored with its first
step, with the carry reset before every step whose ``first`` flag is set, exactly as it was
while acting. The first ``burn_in`` steps only refresh that carry (no gradient), under the
online and the target parameters each. Over the remaining steps, each step's true successor
(``next_obs``; ``final_obs`` where the step ended an episode) is valued with the carry after
that step, so a truncated episode bootstraps under the carry of the episode that ended,
never a fresh one. Targets are n-step (:func:`rollax.ops.nstep_targets`) or Peng's Q(λ)
(:func:`rollax.ops.lambda_returns`) inside the sequence: they stop at a termination and never
reach across an episode's end.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from rollax.agents.dqn.config import DQNConfig
from rollax.agents.dqn.losses import sequence_priority
from rollax.agents.losses import next_state_value, q_learning_loss
from rollax.buffers import Transition
from rollax.networks import Network
from rollax.ops import lambda_returns, nstep_targets

__all__ = ["SequenceReplay", "replay_sequences", "sequence_loss", "sequence_targets"]


class SequenceReplay(NamedTuple):
    """The trained part of ``B`` sampled sequences, time-major, with what replay fixed.

    Attributes:
        steps: The :class:`~rollax.buffers.Transition` of the ``sequence_length`` steps
            after burn-in, leaves ``(sequence_length, B, ...)`` (``carry`` left out).
        online_start: The carry before the first trained step under the online
            parameters: the stored carry, refreshed by burn-in (no gradient).
        target_successor_q: float32 ``(sequence_length, B, A)``: the target network's
            Q-values of each step's true successor, under its own burned-in carry.
    """

    steps: Transition
    online_start: Any
    target_successor_q: jax.Array


def replay_sequences(
    network: Network, burn_in: int, params: Any, target_params: Any, batch: Transition
) -> SequenceReplay:
    """Burn in ``batch``'s sequences and value their successors with the target network.

    Args:
        network: The recurrent Q-network.
        burn_in: Steps at the start of each sequence that only refresh the carry.
        params: The online parameters.
        target_params: The target network's parameters.
        batch: Sequences as replay samples them, leaves ``(B, burn_in + sequence_length,
            ...)``, with ``first`` and ``carry`` (the carry before each step).
    """
    seq = jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), batch.replace(carry=None))
    start = jax.tree.map(lambda c: c[:, 0], batch.carry)
    head = jax.tree.map(lambda x: x[:burn_in], seq)
    steps = jax.tree.map(lambda x: x[burn_in:], seq)

    def burned_in(p: Any) -> Any:
        if not burn_in:
            return start
        return jax.lax.stop_gradient(network.unroll(p, head.obs, start, head.first).carry)

    target = network.unroll(
        target_params, steps.obs, burned_in(target_params), steps.first, steps.next_obs
    )
    return SequenceReplay(steps, burned_in(params), jax.lax.stop_gradient(target.successor_outputs))


def sequence_targets(
    config: DQNConfig, replay: SequenceReplay, online_successor_q: jax.Array, gamma: jax.Array
) -> jax.Array:
    """float32 ``(sequence_length, B)`` targets of the trained steps.

    Args:
        config: ``double_q``, ``td_lambda`` and ``n_step``.
        replay: The replayed sequences.
        online_successor_q: float32 ``(sequence_length, B, A)``: the online network's
            Q-values of each step's successor (picks the action under ``double_q``).
        gamma: The discount (data).
    """
    steps = replay.steps
    bootstrap = next_state_value(online_successor_q, replay.target_successor_q, config.double_q)
    if config.td_lambda:
        return lambda_returns(
            steps.reward, bootstrap, bootstrap, steps.terminated, steps.truncated, gamma,
            config.td_lambda,
        )  # fmt: skip
    return nstep_targets(
        steps.reward, bootstrap, steps.terminated, steps.truncated, gamma, config.n_step
    )


def sequence_loss(
    network: Network,
    config: DQNConfig,
    replay: SequenceReplay,
    weight: jax.Array,
    gamma: jax.Array,
) -> Any:
    """``params -> (loss, (q_taken, priority))`` on replayed sequences.

    The loss is the mean over the trained steps and the sequences of each step's TD loss,
    weighted per sequence by ``weight`` (float32 ``(B,)``, prioritized replay's importance
    weights); ``q_taken`` is float32 ``(sequence_length, B)``, the Q-values of the taken
    actions, and ``priority`` float32 ``(B,)`` each sequence's new priority
    (:func:`~rollax.agents.dqn.losses.sequence_priority`).
    """
    steps = replay.steps

    def loss_fn(params: Any) -> tuple[jax.Array, tuple[jax.Array, jax.Array]]:
        out = network.unroll(params, steps.obs, replay.online_start, steps.first, steps.next_obs)
        target = sequence_targets(
            config, replay, jax.lax.stop_gradient(out.successor_outputs), gamma
        )
        t, b = target.shape
        loss, td_error = q_learning_loss(
            out.outputs.reshape(t * b, -1),
            steps.action.reshape(t * b),
            target.reshape(t * b),
            jnp.broadcast_to(weight, (t, b)).reshape(t * b),
            config.loss,
        )
        td_error = td_error.reshape(t, b)
        return loss, (target - td_error, sequence_priority(td_error))

    return loss_fn
