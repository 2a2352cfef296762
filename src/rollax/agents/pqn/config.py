"""PQN's configuration: static sizes and default hyperparameters, each field documented."""

from __future__ import annotations

import dataclasses

from rollax.agents._exploration import EpsilonGreedyConfig
from rollax.agents._onpolicy_config import OnPolicyConfig
from rollax.host import atari_ids
from rollax.training import OPTIMIZER_DATA, check_fields, with_defaults

__all__ = ["PRESETS", "PQNConfig"]


@dataclasses.dataclass(frozen=True)
@with_defaults(
    num_envs=16,
    num_steps=128,
    total_steps=524_288,
    num_epochs=5,
    num_minibatches=16,
    learning_rate=3e-4,
    max_grad_norm=10.0,
    activation="relu",
)
class PQNConfig(EpsilonGreedyConfig, OnPolicyConfig):
    """Configuration of a PQN training run (Gallici et al., 2024: parallel Q-learning).

    Q(λ) over rollouts of many environments, with no replay buffer and no target network:
    layer normalization in the Q-network keeps the bootstrapped targets stable. The
    rollouts, epochs and network shape are :class:`rollax.agents.OnPolicyConfig`'s, the
    exploration schedule :class:`rollax.agents.dqn.DQNConfig`'s (here over updates). The
    defaults are rejax's settings for CartPole-v1 (its configs/gymnax/cartpole.yaml), with
    the gradient norm bounded at 10 as purejaxql does (rejax clips each element).
    """

    SWEEPABLE = (
        *OPTIMIZER_DATA,
        "gamma",
        "td_lambda",
        "exploration_start",
        "exploration_end",
        "exploration_fraction",
    )

    td_lambda: float = 0.9
    """λ of the Q(λ) targets (rollax.ops.lambda_returns over each rollout, bootstrapping
    from the greedy Q-value): 0 gives one-step Q-learning targets."""
    layer_norm: bool = True
    """Layer normalization in each hidden layer of the Q-network (what lets PQN learn
    without a target network)."""

    def validate(self) -> None:
        """Raise a ``ValueError`` naming the first inconsistent field and what would work."""
        self.validate_onpolicy()
        self.validate_exploration()
        check_fields(self, "unit_interval", "td_lambda")


_CARTPOLE = PQNConfig(num_epochs=2, num_minibatches=8, learning_rate=1e-3, lr_schedule="linear")
"""CartPole in half the time of the defaults (rejax's settings, 5 epochs of 16 minibatches at
lr 3e-4): 2 epochs of 8 at lr 1e-3, annealed linearly to 0, with as many seeds above 475 (the
Benchmarks page, "PQN and TD3", has the figures)."""

_MINATAR = PQNConfig(
    num_envs=128,
    num_steps=32,
    total_steps=1_048_576,
    num_epochs=1,
    num_minibatches=32,
    learning_rate=1e-3,
    exploration_fraction=0.1,
    td_lambda=0.65,
    hidden_sizes=(64, 64),
    image_encoder="flatten",
)
"""gymnax's MinAtar games on the flattened board (a 64 x 64 MLP with layer normalization, as
rejax's PQN): purejaxql's MinAtar rollout (128 environments x 32 steps), epsilon (1 to 0.05
over the first tenth), lambda 0.65 and norm bound, at a CPU's budget of 1M steps instead of
their 10M, with one epoch of 32 minibatches at lr 1e-3 (theirs 2 of 32 at 5e-4): the number of
passes over the samples sets the time, and one pass ties rejax on Breakout (see the
Benchmarks page, "PQN and TD3")."""

_MINATAR_CONV = _MINATAR.replace(hidden_sizes=(128,), image_encoder="cnn")
"""Asterix, which the flattened board does not learn in 1M steps: a 3x3 convolution as in the
MinAtar paper (8 channels instead of its 16, then 128 units), with the flattened board's
epoch of 32 minibatches (more epochs learn more at more than twice the time; the Benchmarks
page, "PQN and TD3", has what each variant reached)."""

_CRAFTAX = PQNConfig(
    num_envs=256,
    num_steps=32,
    total_steps=1_048_576,
    num_epochs=2,
    num_minibatches=8,
    learning_rate=1e-3,
    lr_schedule="linear",
    max_grad_norm=0.5,
    td_lambda=0.8,
    exploration_fraction=0.1,
    exploration_end=0.005,
    normalize_obs=True,
    hidden_sizes=(256, 256),
)
"""Craftax-Classic (symbolic) at a CPU's budget of 1M steps: purejaxql's Craftax epsilon (1
to 0.005 over the first tenth), norm bound (0.5), normalized inputs and linearly decayed
learning rate, on the rollout of rollax's PPO preset for Craftax (256 environments x 32
steps) with 2 epochs of 8 minibatches at lr 1e-3, lambda 0.8 and a 256 x 256 MLP with layer
normalization (the Agents page, PQN, has what it and the alternatives tried reach)."""

_ATARI = PQNConfig(
    num_envs=128,
    num_steps=32,
    total_steps=9_998_336,
    num_epochs=2,
    num_minibatches=32,
    learning_rate=2.5e-4,
    max_grad_norm=10.0,
    gamma=0.99,
    td_lambda=0.65,
    exploration_start=1.0,
    exploration_end=0.001,
    exploration_fraction=0.1,
    hidden_sizes=(),
    activation="relu",
    encoder_layer_norm=True,
)
"""Atari (ALE's or envpool's frames): purejaxql's PQN settings (128 environments x 32 steps,
2 epochs of 32 minibatches, lr 2.5e-4, lambda 0.65, epsilon 1 to 0.001 over a tenth), the
Nature CNN normalized per layer and its dense 512, then the Q head; 10M steps."""

PRESETS: dict[str, PQNConfig] = {
    "CartPole-v1": _CARTPOLE,
    "gymnax/Asterix-MinAtar": _MINATAR_CONV,
    "craftax/Craftax-Classic-Symbolic-v1": _CRAFTAX,
    **{f"gymnax/{game}-MinAtar": _MINATAR for game in ("Breakout", "Freeway", "SpaceInvaders")},
    **dict.fromkeys(atari_ids(), _ATARI),
}
"""Per-environment presets: CartPole's trains the defaults' task in half their time."""
