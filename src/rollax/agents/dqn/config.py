"""DQN's configuration: static sizes and default hyperparameters, each field documented."""

from __future__ import annotations

import dataclasses
from typing import Literal

from rollax.agents._exploration import EpsilonGreedyConfig
from rollax.agents._offpolicy_config import OffPolicyConfig
from rollax.networks import CELLS
from rollax.training import OPTIMIZER_DATA, check_fields, with_defaults

__all__ = ["PRESETS", "DQNConfig"]


@dataclasses.dataclass(frozen=True)
@with_defaults(
    num_envs=10,
    total_steps=100_000,
    buffer_size=50_000,
    learning_starts=5_000,
    batch_size=100,
    gradient_steps=5,
    learning_rate=1e-3,
    normalize_obs=False,
)
class DQNConfig(EpsilonGreedyConfig, OffPolicyConfig):
    """Configuration of a DQN training run (double, dueling, n-step, prioritized, recurrent).

    The defaults are rejax's settings for CartPole-v1 (its configs/gymnax/cartpole.yaml).
    The fields every off-policy agent has are :class:`rollax.agents.OffPolicyConfig`'s; here, the
    exploration schedule spans ``total_steps``. With ``recurrent``, DQN learns in the manner
    of R2D2 (Kapturowski et al., 2019): replay samples sequences of ``burn_in +
    sequence_length`` steps (``batch_size`` of them per gradient step), each replayed from
    the carry stored with its first step.
    """

    SWEEPABLE = (
        *OPTIMIZER_DATA,
        "gamma",
        "tau",
        "exploration_start",
        "exploration_end",
        "exploration_fraction",
        "importance_exponent",
    )

    double_q: bool = True
    """Double DQN: the online network picks the next action, the target network values it."""
    dueling: bool = True
    """Dueling head: separate state-value and advantage streams."""
    target_update_every: int = 5
    """Gradient steps between target updates (with tau=1.0: periodic hard copies). The
    default updates once per learning phase of gradient_steps=5, as rejax does."""
    loss: Literal["huber", "mse"] = "mse"
    """TD loss: half the squared error, or Huber's (delta 1)."""
    clip_grad_value: float = 10.0
    """Each gradient element is clipped to [-clip_grad_value, clip_grad_value] (0: off)."""
    prioritized: bool = False
    """Prioritized replay: windows drawn in proportion to their TD error ** priority_exponent,
    with importance weights."""
    priority_exponent: float = 0.6
    """Prioritized replay's alpha."""
    importance_exponent: float = 0.4
    """Prioritized replay's beta: how much the importance weights correct the sampling."""
    recurrent: Literal["none", "gru", "lstm"] = "none"
    """A recurrent Q-network: a gru or lstm cell between the encoder (an MLP of hidden_sizes,
    after the image encoders for dict observations) and the Q head, whose carry resets at
    every episode start. Replay then samples sequences (R2D2). none: a feed-forward
    Q-network on single windows."""
    cell_size: int = 128
    """Recurrent: features of the cell's state."""
    sequence_length: int = 20
    """Recurrent: steps of each sampled sequence that the loss trains on, after burn_in.
    Targets are built inside the sequence (n_step or td_lambda), and its last step
    bootstraps from its own successor."""
    burn_in: int = 0
    """Recurrent: steps at the start of each sampled sequence replayed without gradient, from
    the stored carry, to refresh the carry under the current parameters before the loss."""
    td_lambda: float = 0.0
    """Recurrent: λ of Peng's Q(λ) targets over each sequence (rollax.ops.lambda_returns);
    0: n_step targets. They stop at a termination and bootstrap a truncation from its final
    observation, under the carry of the episode that ended."""

    def validate(self) -> None:
        """Raise a ``ValueError`` naming the first inconsistent field and what would work."""
        self._validate_recurrent()  # first: replay_length depends on its fields
        self.validate_offpolicy()
        check_fields(self, "positive_int", "target_update_every")
        self.validate_exploration()
        check_fields(self, "unit_interval", "importance_exponent")
        check_fields(self, "non_negative", "clip_grad_value", "priority_exponent")
        if self.loss not in ("huber", "mse"):
            raise ValueError(f"DQNConfig.loss must be 'huber' or 'mse', got {self.loss!r}.")

    @property
    def replay_length(self) -> int:
        """Steps per sampled window: n_step, or burn_in + sequence_length when recurrent."""
        if self.recurrent == "none":
            return self.n_step
        return self.burn_in + self.sequence_length

    def _validate_recurrent(self) -> None:
        if self.recurrent not in ("none", *CELLS):
            raise ValueError(
                f"DQNConfig.recurrent must be 'none', 'gru' or 'lstm', got {self.recurrent!r}."
            )
        check_fields(self, "positive_int", "cell_size", "sequence_length", "n_step")
        check_fields(self, "non_negative_int", "burn_in")
        check_fields(self, "unit_interval", "td_lambda")
        if self.recurrent == "none":
            if self.td_lambda:
                raise ValueError(
                    f"DQNConfig.td_lambda={self.td_lambda} applies to recurrent DQN's "
                    "sequences; set recurrent='gru' or 'lstm', or use n_step for multi-step "
                    "targets."
                )
            return
        if self.td_lambda and self.n_step > 1:
            raise ValueError(
                f"DQNConfig.td_lambda={self.td_lambda} and n_step={self.n_step} are two "
                "kinds of multi-step target; keep one (n_step=1 with td_lambda, or "
                "td_lambda=0 with n_step)."
            )
        if self.n_step > self.sequence_length:
            raise ValueError(
                f"DQNConfig.n_step={self.n_step} exceeds sequence_length="
                f"{self.sequence_length}: n-step targets are built inside each sequence; use "
                f"n_step <= {self.sequence_length}."
            )


PRESETS: dict[str, DQNConfig] = {
    "CartPole-v1": DQNConfig(),
    "gymnax/Breakout-MinAtar": DQNConfig(
        num_envs=16,
        total_steps=1_048_576,
        buffer_size=100_000 - 100_000 % 16,
        learning_starts=10_000,
        batch_size=64,
        gradient_steps=1,
        train_every=1,
        learning_rate=2.5e-4,
        tau=1.0,
        target_update_every=250,
        exploration_fraction=0.25,
        exploration_end=0.01,
        hidden_sizes=(128,),
        activation="relu",
        loss="huber",
        clip_grad_value=0.0,
        max_grad_norm=10.0,
        compact_replay=True,
    ),
    "RepeatPrevious-v0": DQNConfig(
        num_envs=16,
        total_steps=80_000,
        buffer_size=16_000,
        learning_starts=800,
        batch_size=32,
        gradient_steps=1,
        train_every=1,
        learning_rate=1e-3,
        n_step=3,
        tau=1.0,
        target_update_every=250,
        exploration_fraction=0.3,
        exploration_end=0.02,
        hidden_sizes=(64,),
        activation="relu",
        loss="huber",
        normalize_obs=False,
        recurrent="gru",
        cell_size=64,
        sequence_length=10,
        burn_in=5,
    ),
}
"""Per-environment defaults. CartPole's are rejax's settings for it (its
configs/gymnax/cartpole.yaml); RepeatPrevious's are a recurrent learner (R2D2) of sequences
of 10 steps after a burn-in of 5."""
