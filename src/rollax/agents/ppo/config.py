"""PPO's configuration: static sizes and default hyperparameters, each field documented."""

from __future__ import annotations

import dataclasses

from rollax.agents._onpolicy_config import OnPolicyConfig
from rollax.host import atari_ids
from rollax.training import OPTIMIZER_DATA, check_fields, with_defaults

__all__ = ["PPOConfig", "PRESETS"]


@dataclasses.dataclass(frozen=True)
@with_defaults(learning_rate=2.5e-3, lr_schedule="linear", max_grad_norm=0.5)
class PPOConfig(OnPolicyConfig):
    """Configuration of a PPO training run.

    The rollouts, epochs and network shape are :class:`rollax.agents.OnPolicyConfig`'s.
    Sizes and switches are static (changing them compiles again). The hyperparameters
    (learning rate, coefficients, discount) are only defaults: the trainer copies them into
    the training state, where they are data and may differ per seed.
    """

    SWEEPABLE = (
        *OPTIMIZER_DATA,
        "gamma",
        "gae_lambda",
        "clip_eps",
        "ent_coef",
        "vf_coef",
        "reward_scale",
    )

    gae_lambda: float = 0.95
    """GAE's lambda."""
    clip_eps: float = 0.2
    """Clipping range of the probability ratio (and of the value, with clip_value)."""
    clip_value: bool = False
    """Clip the value update around the rollout's values, as in the original PPO code."""
    ent_coef: float = 0.01
    """Weight of the entropy bonus."""
    vf_coef: float = 0.5
    """Weight of the value loss."""
    reward_scale: float = 1.0
    """Rewards are multiplied by this before advantages and value targets (Brax's
    reward_scaling): keeps values of order one where returns are large, so that the value
    loss does not swamp the policy's gradient in a shared encoder. Reported returns are
    unscaled."""
    normalize_advantages: bool = True
    """Standardize advantages within each minibatch."""
    actor_keys: tuple[str, ...] = ()
    """Dict observations: the keys the actor reads (empty: every key but privileged_state)."""
    critic_keys: tuple[str, ...] = ()
    """Dict observations: the keys the critic reads (empty: every key)."""

    def validate(self) -> None:
        """Raise a ``ValueError`` naming the first inconsistent field and what would work."""
        self.validate_onpolicy()
        check_fields(self, "positive", "clip_eps", "reward_scale")
        check_fields(self, "non_negative", "ent_coef")
        # vf_coef = 0 would leave the critic untrained, and the advantages meaningless.
        check_fields(self, "positive", "vf_coef")
        check_fields(self, "unit_interval", "gae_lambda")
        for name in ("actor_keys", "critic_keys"):
            keys = getattr(self, name)
            if not isinstance(keys, tuple) or not all(isinstance(k, str) for k in keys):
                raise ValueError(f"PPOConfig.{name} must be a tuple of str, got {keys!r}.")


_MINATAR = PPOConfig(
    num_envs=64,
    num_steps=128,
    total_steps=1_048_576,
    num_epochs=4,
    num_minibatches=8,
    learning_rate=3e-3,
    gamma=0.999,
    clip_value=True,
    hidden_sizes=(128, 128),
    activation="relu",
    image_encoder="flatten",
)
"""gymnax's MinAtar games: the gymnax authors' rollout, epochs and discount (64 x 128, 4
epochs, 8 minibatches, gamma 0.999) on the flattened board, with a learning rate of 3e-3
annealed to zero instead of their constant 5e-4 (which leaves Breakout on a plateau) and
relu 128x128 for actor and critic each instead of 256x256: 40% of the multiply-adds per
sample, for returns as high (the Agents page, PPO, has the figures). Freeway's preset widens
both to 192x192."""

_MEMORY = PPOConfig(
    num_envs=64,
    num_steps=32,
    total_steps=1_048_576,
    learning_rate=4e-3,
    hidden_sizes=(64,),
    recurrent="gru",
    cell_size=64,
)
"""Partially observed tasks: a GRU of 64 between a 64-wide encoder and the heads, 64
environments x 32 steps, lr 4e-3 annealed: lower rates left some seeds of
StatelessCartPole-v1 short of 500 (the Agents page, "Memory: recurrent PPO", has the
figures)."""

_CRAFTAX = PPOConfig(
    num_envs=256,
    num_steps=32,
    total_steps=1_048_576,
    num_epochs=4,
    num_minibatches=8,
    learning_rate=1e-3,
    gamma=0.99,
    gae_lambda=0.8,
    clip_value=True,
    max_grad_norm=1.0,
    hidden_sizes=(256, 256),
)
"""Craftax-Classic (symbolic): the Craftax authors' PPO (GAE lambda 0.8, clipped value loss,
max grad norm 1.0, 4 epochs of 8 minibatches) at a CPU's budget. Their 1,024 environments x
64 steps make 16 updates in 1M steps; 256 x 32 make 128, at lr 1e-3 annealed (theirs 2e-4),
on tanh 256x256 instead of 3 x 512, which steps faster on a CPU (the Environments page,
"Training on the worlds", has what it and the variants tried reach)."""

_GRID = PPOConfig(
    num_envs=64,
    num_steps=128,
    total_steps=1_048_576,
    num_epochs=4,
    num_minibatches=8,
    learning_rate=1e-3,
    hidden_sizes=(256, 256),
    activation="relu",
)
"""Grid worlds of Jumanji and XLand-MiniGrid on their flattened grids (the Environments page,
"Training on the worlds", has what they reach)."""

_PLAYGROUND = PPOConfig(
    num_envs=128,
    num_steps=32,
    total_steps=1_048_576,
    num_epochs=4,
    num_minibatches=8,
    learning_rate=1e-3,
    gamma=0.995,
    reward_scale=0.1,
    normalize_obs=True,
)
"""MuJoCo Playground's DM Control tasks at a CPU's budget: Playground's published discount
(0.995), learning rate (1e-3) and observation normalization, on 128 environments x 32 steps
with 4 epochs of 8 minibatches instead of its 2,048 x 30 with 16 epochs of 32 (a batch for a
GPU), and a reward scale of 0.1 instead of 10, which keeps the values of 1,000-step episodes
(about 200 unscaled at this discount) near 20. The Environments page, "Training on
Playground", has what it reaches."""

_PLAYGROUND_GPU = _PLAYGROUND.replace(
    num_envs=2_048, num_steps=480, num_epochs=16, num_minibatches=32, total_steps=59_965_440
)
"""MuJoCo Playground's heavy DM Control tasks, a GPU's preset: Playground's published batch
(``brax_ppo_config``: 2,048 environments, 16 unrolls of 30 steps between updates, 16 epochs
of 32 minibatches of 1,024, 983,040 steps an iteration) and its 60M steps, in whole
iterations (61), over :data:`_PLAYGROUND`'s settings, which are Playground's but for the reward
scale. rollax estimates advantages over each environment's 480 steps where Brax cuts them
into unrolls of 30. Not trained on a CPU, where 60M of these steps take hours (see the
Environments page); ``benchmarks/gpu.py --only playground`` trains it on a GPU."""

_ATARI = PPOConfig(
    num_envs=8,
    num_steps=128,
    total_steps=9_999_360,
    num_epochs=4,
    num_minibatches=4,
    learning_rate=2.5e-4,
    lr_schedule="linear",
    gamma=0.99,
    gae_lambda=0.95,
    clip_eps=0.1,
    clip_value=True,
    ent_coef=0.01,
    vf_coef=0.5,
    max_grad_norm=0.5,
    hidden_sizes=(),
    activation="relu",
)
"""Atari (ALE's or envpool's frames): CleanRL's PPO settings and network (the Nature CNN and
its dense 512, then linear heads), 10M steps (9,765 rollouts of 8 x 128). CleanRL's value
clipping is rollax's ``clip_value`` with the same range."""

PRESETS: dict[str, PPOConfig] = {
    "CartPole-v1": PPOConfig(),
    # The default entropy bonus: without it a seed can settle on a policy that never swings
    # up (the Agents page, PPO, has the runs).
    "Acrobot-v1": PPOConfig(total_steps=262_144),
    # Minibatches of 512 and 5 epochs: half the gradient work of 64-sample minibatches over
    # 10 epochs, for the same returns (the Agents page, PPO).
    "Pendulum-v1": PPOConfig(
        num_envs=32,
        num_steps=128,
        total_steps=655_360,
        num_epochs=5,
        num_minibatches=8,
        learning_rate=2e-3,
        gamma=0.95,
        ent_coef=0.0,
        clip_eps=0.2,
        max_grad_norm=0.5,
        normalize_obs=True,
    ),
    # 8 environments and 5 epochs: a quarter of the gradient work of 16 x 128 over 10
    # epochs. gamma 0.999: at 0.99 some seeds never find the goal, whatever else changes
    # (the Agents page, PPO, has the runs).
    "MountainCarContinuous-v0": PPOConfig(
        num_envs=8,
        num_steps=128,
        total_steps=196_608,
        num_epochs=5,
        num_minibatches=16,
        learning_rate=6e-4,
        gamma=0.999,
        ent_coef=0.0,
        normalize_obs=True,
    ),
    "PixelCartPole-v1": PPOConfig(
        num_envs=16,
        num_steps=128,
        total_steps=1_048_576,
        num_epochs=4,
        num_minibatches=8,
        learning_rate=1e-3,
        reward_scale=0.1,
        hidden_sizes=(256,),
        activation="relu",
        frame_stack=2,
    ),
    "StatelessCartPole-v1": _MEMORY,
    # Recall after 5 steps: a quarter of StatelessCartPole's budget is enough (the Agents
    # page, "Memory: recurrent PPO").
    "gymnax/MemoryChain-bsuite": _MEMORY.replace(total_steps=262_144),
    "brax/inverted_pendulum": PPOConfig(
        num_envs=256,
        num_steps=32,
        total_steps=1_048_576,
        num_epochs=4,
        num_minibatches=8,
        learning_rate=1e-3,
        normalize_obs=True,
        # No entropy bonus: the policy's spread shrinks once balanced, and episodes run with
        # sampled actions stay up (with the default 0.01 an episode can fall; the Benchmarks
        # page, "Learning quality").
        ent_coef=0.0,
    ),
    **{f"gymnax/{game}-MinAtar": _MINATAR for game in ("Breakout", "Asterix", "SpaceInvaders")},
    # Freeway rewards each crossing of the road, and 128x128 plateaus a little below rejax's
    # 256x256 there; 192x192 ends above it in less time than 256x256 (the Agents page, PPO).
    "gymnax/Freeway-MinAtar": _MINATAR.replace(hidden_sizes=(192, 192)),
    "craftax/Craftax-Classic-Symbolic-v1": _CRAFTAX,
    # Jumanji's discount (0.997, its A2C's) and lr 2.5e-3, on which every seed learns;
    # Jumanji's Maze has no preset, as a seed in three stayed near random with them (the
    # Environments page, "Training on the worlds").
    "jumanji/Snake-v1": _GRID.replace(learning_rate=2.5e-3, gamma=0.997),
    "xminigrid/MiniGrid-DoorKey-5x5": _GRID,
    "playground/CartpoleBalance": _PLAYGROUND,
    # Reaching a target: CartpoleBalance's settings over twice the steps, as both seeds
    # tried still gained from 1M to 2M (the Environments page, "Training on Playground").
    "playground/ReacherEasy": _PLAYGROUND.replace(total_steps=2_097_152),
    # Swinging the pole up: every action held for 4 control steps (250 agent steps an
    # episode); without the repeat some seeds stall below the swing-up (the Environments
    # page, "Training on Playground", has every run).
    "playground/CartpoleSwingup": _PLAYGROUND.replace(action_repeat=4),
    # Swinging up a pendulum whose reward is sparse (only near upright). Playground's own
    # settings ask for an action repeat of 4 but name the task "PendulumSwingUp", which is not
    # its id, so they never apply. The repeat is what lets it swing up, over 3M agent steps
    # (the Environments page, "Training on Playground", has every run).
    "playground/PendulumSwingup": _PLAYGROUND.replace(action_repeat=4, total_steps=3_145_728),
    # Swinging up a double pendulum driven at its elbow only. Each action held for 2 control
    # steps, 512 environments, 488 whole iterations of 512 x 32 (8M agent steps): fewer
    # environments ended lower, and 16M steps no higher (the Environments page, "Training on
    # Playground", has every run). Playground trains it for 100M steps.
    "playground/AcrobotSwingup": _PLAYGROUND.replace(
        action_repeat=2, num_envs=512, total_steps=7_995_392
    ),
    # The heavy tasks, whose steps cost some 65 times CartpoleBalance's: a GPU's batch.
    "playground/WalkerWalk": _PLAYGROUND_GPU,
    "playground/CheetahRun": _PLAYGROUND_GPU,
    **dict.fromkeys(atari_ids(), _ATARI),
}
"""Per-environment defaults where CartPole's would not solve the task."""
