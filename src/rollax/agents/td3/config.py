"""TD3's configuration: static sizes and default hyperparameters, each field documented."""

from __future__ import annotations

import dataclasses

from rollax.agents._offpolicy_config import (
    CorrelatedExplorationConfig,
    OffPolicyConfig,
    TwinCriticConfig,
)
from rollax.training import OPTIMIZER_DATA, with_defaults
from rollax.training._validate import check_fields

__all__ = ["PRESETS", "TD3Config"]


@dataclasses.dataclass(frozen=True)
@with_defaults(
    learning_starts=1_000, batch_size=100, learning_rate=1e-3, tau=0.05, max_grad_norm=100.0
)
class TD3Config(TwinCriticConfig, CorrelatedExplorationConfig, OffPolicyConfig):
    """Configuration of a TD3 run (Fujimoto et al., 2018).

    Twin critics whose smaller value is the target, target policy smoothing, and delayed
    actor and target updates.

    The defaults are rejax's settings for Pendulum-v1 (its configs/gymnax/pendulum.yaml).
    With many environments, large batches, ``n_step`` returns and ``critic_layer_norm`` it
    trains in the FastTD3 manner. Noise scales are fractions of each action's half range.
    """

    SWEEPABLE = (*OPTIMIZER_DATA, "gamma", "tau", "exploration_noise", "policy_noise", "noise_clip")

    exploration_noise: float = 0.3
    """Standard deviation of the Gaussian noise added to the actor's actions while it
    explores (after learning_starts, uniform actions before; from the start, and correlated
    over time, with exploration_correlation)."""
    policy_noise: float = 0.2
    """Standard deviation of the noise that smooths the target policy's actions."""
    noise_clip: float = 0.5
    """The smoothing noise is clipped to [-noise_clip, noise_clip]."""
    policy_delay: int = 2
    """Critic steps per actor step; the target networks move with the actor."""
    num_atoms: int = 0
    """Distributional critics (C51, FastTD3's): return distributions over this many atoms
    from v_min to v_max, towards the projected target of the twin expecting less. 0: off."""
    v_min: float = -10.0
    """Distributional critics: the smallest return of the support."""
    v_max: float = 10.0
    """Distributional critics: the largest return of the support."""

    def validate(self) -> None:
        """Raise a ``ValueError`` naming the first inconsistent field and what would work."""
        self.validate_offpolicy()
        check_fields(self, "non_negative", "exploration_noise", "policy_noise", "noise_clip")
        check_fields(self, "positive_int", "policy_delay")
        self.validate_exploration()
        if self.num_atoms == 1 or self.num_atoms < 0 or not self.v_min < self.v_max:
            raise ValueError(
                f"TD3Config.num_atoms={self.num_atoms} must be 0 (one value per critic) or at "
                f"least 2, with v_min < v_max (got {self.v_min}, {self.v_max})."
            )


_FASTTD3 = TD3Config(
    num_envs=16, total_steps=98_304, buffer_size=98_304, learning_starts=4_096,
    batch_size=256, gradient_steps=8, learning_rate=3e-4, tau=0.005, exploration_noise=0.1,
    hidden_sizes=(64, 64), activation="relu",
)  # fmt: skip
"""FastTD3's manner at a CPU's scale: 16 environments, 8 gradient steps of 256 per vectorized
step, CleanRL's learning rate, target rate and exploration noise, 64 x 64 networks."""

_PLAYGROUND = _FASTTD3.replace(total_steps=262_144, buffer_size=262_144)
"""MuJoCo Playground's DM Control tasks: :data:`_FASTTD3` over 262,144 steps."""

PRESETS: dict[str, TD3Config] = {
    "Pendulum-v1": TD3Config(),
    # The goal is far and the reward for effort is negative: with independent noise the
    # actor learns to stand still (rejax's settings, 10k steps, evaluated with their noise:
    # -4.2 to -4.8 on 4 seeds). Correlated noise of 0.5 half ranges finds it: 8 seeds in one
    # program at 92.9 to 94.3 after 20k steps (4 of 8 after 10k), about 5 s a seed on 2 CPUs.
    "MountainCarContinuous-v0": TD3Config(
        total_steps=20_000, buffer_size=20_000, tau=0.01, exploration_noise=0.5,
        exploration_correlation=0.95,
    ),
    # FastTD3's manner (_FASTTD3): 10 of 10 seeds at 1,000 after 98,304 steps, 23.3 s a seed
    # on 2 CPUs; 128 x 128 networks held 9 of 10 in 60.7 s.
    "brax/inverted_pendulum": _FASTTD3,
    # MuJoCo Playground's CartpoleBalance: inverted_pendulum's settings over 262,144 steps (2
    # seeds in one program: 464 and 493 after 98,304 steps, 852 and 614 after 196,608, 918
    # and 989 after 262,144, 83 s a seed on 2 CPUs).
    "playground/CartpoleBalance": _PLAYGROUND,
    # Reaching a target with the same settings: 2 seeds in one program at 603 and 893 after
    # 262,144 steps (about 90 s a seed on 2 CPU cores); 5 seeds in benchmarks/returns.py: IQM
    # 634, below Brax's SAC (912) with Playground's settings; 705 with critic_layer_norm=True.
    # Tried since, 4 seeds in one program, 16 episodes each: n_step=3 gave 810, 818, 171 and
    # 119 (no faster); 256 x 256 networks with 2 gradient steps a step 517, 397, 103 and 551
    # at 2.3x the time; 256 x 256 with 8 gradient steps about 4x the time (stopped);
    # exploration_noise=0.2 763, 519, 316 and 548 (the same time); distributional critics
    # (num_atoms=101 over [0, 100]) 4x to 5x the time (stopped at 134k steps, training
    # return 518 where exploration_noise=0.2 had 361). Then SAC's Playground batch (32
    # environments, 2 gradient steps of 256, 256 x 256 networks, learning rate 1e-3) 656,
    # 776, 420 and 690 at about 100 s a seed; FastTD3's mixed noise (each environment's own
    # scale, spread from 0.001 to 0.4 over the batch) 457, 849, 580 and 745 at the same time.
    # Correlated noise, as MountainCarContinuous's (5 seeds, the row's): correlation 0.95 at
    # 0.3 gave 549 to 668 (IQM 626), 0.9 at 0.2 gave 224 to 820 (IQM 588), 87 s a seed.
    # Not the evaluation (the bare actor within 30 of the noisy one on each seed), not DrQ-v2's
    # noise schedule (1.0 to 0.1 over 65,536 steps: IQM 572), not saturated actions (an L2
    # penalty on them, weight 1.0: IQM 485), not the delayed actor and smoothed target
    # (policy_delay=1, policy_noise=0: IQM 530 against the preset's 607 in one session);
    # docs/environments.md has the figures.
    "playground/ReacherEasy": _PLAYGROUND,
}  # fmt: skip
"""Per-environment defaults. Pendulum's are rejax's settings for it; MountainCarContinuous's
explore with correlated noise; inverted_pendulum's and Playground's CartpoleBalance and
ReacherEasy train in FastTD3's manner."""
