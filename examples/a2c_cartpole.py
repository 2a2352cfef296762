"""A new agent in one file: A2C written on rollax's on-policy driver, trained on CartPole-v1.

An on-policy algorithm gives the driver what is its own, for one seed on one shard of its
environments: a network, how it acts on the network's outputs, the value it bootstraps
from, its targets from a rollout and its loss on a minibatch. ``build_onpolicy_agent`` does
the rest: the rollout (true final observations where episodes end, a recurrent carry if
the network has one), the epochs of minibatches and the gradient steps. The training layer
then gives the agent, with nothing more written here: many seeds in one program, sweeps,
shards over devices, exact budgets, the NaN guard, run directories with checkpoints and
bit-identical resume, evaluation and video.

    python examples/a2c_cartpole.py --total-steps 131072 --num-seeds 4

Trains in a run directory (``--run-dir``), resumes it to twice the budget, and prints each
seed's greedy return (last line: ``eval_return=<mean over seeds>``).
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
from pathlib import Path

import flax.struct
import jax
import jax.numpy as jnp

from rollax.agents import (
    OnPolicyConfig,
    OnPolicyLearner,
    build_onpolicy_agent,
    with_defaults,
)
from rollax.agents.ppo import actor_critic
from rollax.networks import ActorCritic
from rollax.ops import gae
from rollax.runs import Algorithm, RunConfig, evaluate_run, register, resume, train
from rollax.spaces import observation_spec
from rollax.training import (
    OPTIMIZER_DATA,
    Optimizer,
    OptimizerHyperParams,
    optimizer_values,
    shard_env,
)


@dataclasses.dataclass(frozen=True)
@with_defaults(num_steps=16, num_epochs=1, num_minibatches=1, learning_rate=2e-3)
class A2CConfig(OnPolicyConfig):
    """A2C: one gradient step per rollout, on its whole batch, of the actor-critic loss."""

    SWEEPABLE = (*OPTIMIZER_DATA, "gamma", "gae_lambda", "ent_coef", "vf_coef")

    gae_lambda: float = 1.0
    """GAE's lambda (1: n-step returns to the rollout's end, as in A2C)."""
    ent_coef: float = 0.01
    """Weight of the entropy bonus."""
    vf_coef: float = 0.5
    """Weight of the value loss."""

    def validate(self) -> None:
        """Raise a ``ValueError`` naming the first inconsistent field."""
        self.validate_onpolicy()


@flax.struct.dataclass
class A2CHyperParams(OptimizerHyperParams):
    """Per-seed data: sweeps and population-based training change it without compiling."""

    gamma: jax.Array
    gae_lambda: jax.Array
    ent_coef: jax.Array
    vf_coef: jax.Array


def hyperparams(config: A2CConfig) -> A2CHyperParams:
    """One member's hyperparameters; the learning-rate schedule spans the budget's updates."""
    return A2CHyperParams(
        **optimizer_values(config, config.updates_in_budget),
        gamma=config.gamma,
        gae_lambda=config.gae_lambda,
        ent_coef=config.ent_coef,
        vf_coef=config.vf_coef,
    )


def loss(hp: A2CHyperParams, outputs: tuple, steps: tuple) -> tuple:
    """Policy gradient with the advantage as baseline, squared value error, entropy bonus."""
    (dist, value), (action, advantage, target) = outputs, steps
    policy_loss = -(dist.log_prob(action) * advantage).mean()
    value_loss = 0.5 * jnp.square(value - target).mean()
    entropy = dist.entropy().mean()
    total = policy_loss + hp.vf_coef * value_loss - hp.ent_coef * entropy
    return total, (policy_loss, value_loss, entropy)


def make_a2c(config: A2CConfig, env: str, **make_options) -> object:
    """A2C for ``env``: its learner on the on-policy driver."""
    config.validate()
    env = shard_env("make_a2c", config, env, **make_options)
    module = ActorCritic.for_space(env.action_space, config.hidden_sizes, config.activation)

    def targets(hp: A2CHyperParams, data) -> tuple:
        advantage, target = gae(
            data.reward, data.value, data.next_value, data.terminated, data.truncated,
            hp.gamma, hp.gae_lambda,
        )  # fmt: skip
        return data.action, advantage, target

    learner = OnPolicyLearner(
        network=actor_critic(module),
        obs_spec=observation_spec(env.observation_space, "make_a2c: A2C"),
        optimizer=Optimizer.of(config),
        hyperparams=hyperparams,
        explore=lambda state, outputs, key: (outputs[0].sample(seed=key), ()),
        act=lambda state, outputs, key, greedy: (
            outputs[0].mode() if greedy else outputs[0].sample(seed=key)
        ),
        value=lambda outputs: outputs[1],
        targets=targets,
        loss=loss,
        metric_names=("policy_loss", "value_loss", "entropy"),
    )
    return build_onpolicy_agent("a2c", config, env, learner)


register(Algorithm("a2c", "Advantage actor-critic (example)", A2CConfig, make_a2c))


def main() -> None:
    """Train in a run directory, resume it to twice the budget, evaluate every seed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total-steps", type=int, default=131_072)
    parser.add_argument("--num-seeds", type=int, default=4)
    parser.add_argument("--run-dir", type=Path, default=None)
    args = parser.parse_args()
    run_dir = args.run_dir or Path(tempfile.mkdtemp()) / "a2c"
    config = A2CConfig(num_seeds=args.num_seeds, total_steps=args.total_steps // 2)
    rc = RunConfig(env="CartPole-v1", run_dir=str(run_dir), progress=False, eval_episodes=0)
    train(config, rc)
    resume(run_dir, total_steps=args.total_steps)  # from its checkpoint, schedules stretched
    result = evaluate_run(run_dir, episodes=16)
    per_seed = result["deterministic"]["per_seed_mean"]
    print("greedy return per seed:", ", ".join(f"{r:.1f}" for r in per_seed))
    print(f"eval_return={sum(per_seed) / len(per_seed):.1f}")


if __name__ == "__main__":
    main()
