"""PQN's configuration: static sizes and default hyperparameters, each field documented."""

from __future__ import annotations

import dataclasses

from rollax.agents._exploration import EpsilonGreedyConfig
from rollax.agents._onpolicy_config import OnPolicyConfig
from rollax.training import OPTIMIZER_DATA, with_defaults
from rollax.training._validate import check_fields

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
lr 3e-4): 2 epochs of 8 at lr 1e-3, annealed linearly to 0. 20 seeds in one program after
524,288 steps, greedy: 20 above 475, 1.9 s a seed on 2 CPU cores, where the defaults took 3.8
(20 of 20). Constant lr 1e-3 gave 19 of 20; one epoch of 16 at lr 1e-3, 8 of 10 in 1.6 s."""

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
their 10M, with one epoch of 32 minibatches at lr 1e-3 (theirs 2 of 32 at 5e-4). Breakout
after 1M steps, 10 seeds in one program, greedy: IQM 19.6 [16.5, 23.1], seeds 14.3 to 26.1,
5.4 s a seed on 2 CPU cores; 2 epochs of 8 minibatches reach 20.4 in 7.2 s, 1 epoch of 16
14.6 in 5.3 s."""

_MINATAR_CONV = _MINATAR.replace(hidden_sizes=(128,), image_encoder="cnn")
"""Asterix, which the flattened board does not learn in 1M steps (4 seeds, greedy: IQM 1.3
with 1 epoch of 32 minibatches, 1.8 with 2, 1.3 at 128 x 128): a 3x3 convolution as in the
MinAtar paper (8 channels instead of its 16, then 128 units), with the flattened board's
epoch of 32 minibatches. 10 seeds after 1M steps, greedy: IQM 24.8 [18.8, 31.5], seeds 14.6
to 42.9, 29.5 s a seed on 2 CPU cores (rejax's flattened board: 11.3 s, IQM 1.3). 4 epochs of
16 minibatches at lr 1e-3 annealed reach 35.7 [29.6, 40.5] in 71.3 s a seed; a 3x3
convolution of 16 channels at stride 2 costs 16.7 s a seed on 4 seeds but learns less (3.8 to
12.5, where this preset's first 4 seeds reach 5.5 to 27.1)."""

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
normalization. Seeds 0 and 1 in one program after 1M steps, greedy: returns 4.7 and 5.9,
83 s a seed on 2 CPU cores (rollax's PPO preset: 6.0 on seed 0). Lambda 0.5: 4.9 and 4.4;
one epoch: 3.0 and 3.2; purejaxql's own shape (1,024 environments x 1 step, one epoch of one
minibatch, 512 x 512, lr 3e-4, lambda 0): 3.7 and 3.8."""

PRESETS: dict[str, PQNConfig] = {
    "CartPole-v1": _CARTPOLE,
    "gymnax/Asterix-MinAtar": _MINATAR_CONV,
    "craftax/Craftax-Classic-Symbolic-v1": _CRAFTAX,
    **{f"gymnax/{game}-MinAtar": _MINATAR for game in ("Breakout", "Freeway", "SpaceInvaders")},
}
"""Per-environment presets: CartPole's trains the defaults' task in half their time."""
