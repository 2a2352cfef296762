"""SAC on Pendulum-v1 in one file, from rollax's public pieces (PureJaxRL style).

One jitted ``lax.scan`` steps the environment, stores each transition with its true
successor, and after ``learning_starts`` takes one gradient step per environment step:
temperature, twin critics, actor, then Polyak-averaged target critics. Pendulum never
terminates: every episode end is a 200-step truncation, which SAC must bootstrap through
(``nstep_return`` gives a discount of 0 only after ``terminated``). What rollax supplies:

- ``rollax.make`` with ``timestep.final_obs``; ``SequenceBuffer`` replay;
- ``SquashedGaussianActor`` and ``TanhGaussian`` (stable log-density, any action bounds),
  ``DoubleQ`` critics;
- ``soft_target``, ``twin_critic_loss``, ``sac_actor_loss``, ``sac_alpha_loss``: SAC's pure
  losses; ``normalize_observation`` and friends for running observation statistics.

    python examples/sac_pendulum.py --total-steps 10000

Last line: ``eval_return=<mean>`` of the deterministic policy. ``rollax train sac`` runs the
same algorithm with run directories, checkpoints and resume.
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

import rollax
from rollax.agents.losses import twin_critic_loss
from rollax.agents.sac import sac_actor_loss, sac_alpha_loss, soft_target
from rollax.buffers import SequenceBuffer, Transition
from rollax.networks import DoubleQ, SquashedGaussianActor, TanhGaussian
from rollax.ops import normalize_observation, nstep_return, running_stats, update_running_stats


def main() -> None:
    """Train, evaluate the deterministic policy, print the return."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total-steps", type=int, default=10_000)
    parser.add_argument("--eval-episodes", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    gamma, tau, batch_size, learning_starts = 0.99, 0.02, 256, 256
    env = rollax.make("Pendulum-v1", num_envs=1)
    low, high = jnp.full((1,), -2.0), jnp.full((1,), 2.0)
    target_entropy = -1.0  # -action_dim
    actor = SquashedGaussianActor(action_dim=1, hidden_sizes=(64, 64), activation="swish")
    critic = DoubleQ(hidden_sizes=(64, 64), activation="swish")
    buffer = SequenceBuffer(capacity=10_000, num_envs=1)
    optimizer = optax.adam(1e-2)

    def policy(actor_params, obs):
        mean, log_std = actor.apply(actor_params, obs)
        return TanhGaussian(mean, log_std, low, high)

    def gradient_step(learner, replay, stats, key):
        params, target_critic, opts = learner
        k_sample, k_next, k_new = jax.random.split(key, 3)
        batch = buffer.sample(replay, k_sample, batch_size).item  # leaves (batch, 1, ...)
        obs = normalize_observation(stats, batch.obs[:, 0])
        next_obs = normalize_observation(stats, batch.next_obs[:, 0])
        ret = nstep_return(batch.reward, batch.terminated, batch.truncated, gamma)

        noise = jax.random.normal(k_new, (batch_size, 1))  # one draw for alpha and actor

        def alpha_loss(log_alpha):
            _, log_prob = policy(params["actor"], obs).from_noise(noise)
            return sac_alpha_loss(log_alpha, log_prob, target_entropy)

        def critic_loss(critic_params):
            next_action, next_log_prob = policy(params["actor"], next_obs).sample_and_log_prob(
                k_next
            )
            next_q = critic.apply(target_critic, next_obs, next_action)
            alpha = jnp.exp(params["log_alpha"])
            target = soft_target(ret.reward, ret.discount, next_q, next_log_prob, alpha)
            return twin_critic_loss(critic.apply(critic_params, obs, batch.action[:, 0]), target)

        def actor_loss(actor_params, critic_params):
            action, log_prob = policy(actor_params, obs).from_noise(noise)
            q = critic.apply(critic_params, obs, action)
            return sac_actor_loss(q, log_prob, jnp.exp(params["log_alpha"]))

        new, new_opts = {}, {}
        for name, grad in (
            ("log_alpha", jax.grad(alpha_loss)(params["log_alpha"])),
            ("critic", jax.grad(critic_loss)(params["critic"])),
        ):
            updates, new_opts[name] = optimizer.update(grad, opts[name], params[name])
            new[name] = optax.apply_updates(params[name], updates)
        grad = jax.grad(actor_loss)(params["actor"], new["critic"])  # against the new critics
        updates, new_opts["actor"] = optimizer.update(grad, opts["actor"], params["actor"])
        new["actor"] = optax.apply_updates(params["actor"], updates)
        target_critic = jax.tree.map(
            lambda t, p: (1.0 - tau) * t + tau * p, target_critic, new["critic"]
        )
        return new, target_critic, new_opts

    def iteration(carry, key):
        learner, replay, stats, env_state, obs, step = carry
        k_act, k_uniform, k_learn = jax.random.split(key, 3)
        stats = update_running_stats(stats, obs)
        sampled = policy(learner[0]["actor"], normalize_observation(stats, obs)).sample(k_act)
        uniform = jax.random.uniform(k_uniform, sampled.shape, jnp.float32, -2.0, 2.0)
        action = jnp.where(step < learning_starts, uniform, sampled)
        env_state, ts = env.step(env_state, action)
        replay = buffer.add(replay, Transition.from_step(obs, action, ts))
        step = step + 1
        learner = jax.lax.cond(
            step >= learning_starts,
            lambda lr: gradient_step(lr, replay, stats, k_learn),
            lambda lr: lr,
            learner,
        )
        ended = jnp.where(ts.done, ts.info["episode_return"], jnp.nan)
        return (learner, replay, stats, env_state, ts.obs, step), ended

    @jax.jit
    def train(key):
        k_env, k_actor, k_critic, k_steps = jax.random.split(key, 4)
        env_state, ts = env.reset(k_env)
        params = {
            "actor": actor.init(k_actor, ts.obs[0]),
            "critic": critic.init(k_critic, ts.obs[0], jnp.zeros((1,))),
            "log_alpha": jnp.zeros(()),
        }
        opts = {name: optimizer.init(p) for name, p in params.items()}
        example = Transition(
            obs=ts.obs[0], action=jnp.zeros((1,)), reward=jnp.float32(0.0),
            terminated=jnp.bool_(False), truncated=jnp.bool_(False), next_obs=ts.obs[0],
        )  # fmt: skip
        carry = ((params, params["critic"], opts), buffer.init(example), running_stats((3,)),
                 env_state, ts.obs, jnp.zeros((), jnp.int32))  # fmt: skip
        carry, ended = jax.lax.scan(iteration, carry, jax.random.split(k_steps, args.total_steps))
        return carry[0][0]["actor"], carry[2], ended

    start = time.perf_counter()
    actor_params, stats, ended = jax.block_until_ready(train(jax.random.key(args.seed)))
    ended = np.asarray(ended).reshape(10, -1)
    for i, chunk in enumerate(ended):
        print(f"steps {(i + 1) * args.total_steps // 10:>6}: return {np.nanmean(chunk):8.1f}")
    print(f"{args.total_steps} steps in {time.perf_counter() - start:.1f} s (compile included)")

    eval_env = rollax.make("Pendulum-v1", num_envs=args.eval_episodes, autoreset_mode="disabled")

    @jax.jit
    def evaluate(key):
        env_state, ts = eval_env.reset(key)

        def step(carry, _):
            env_state, obs, total = carry
            action = policy(actor_params, normalize_observation(stats, obs)).mode()
            env_state, ts = eval_env.step(env_state, action)
            return (env_state, ts.obs, total + ts.reward), None

        carry = (env_state, ts.obs, jnp.zeros(args.eval_episodes))
        return jax.lax.scan(step, carry, None, 200)[0][-1]

    returns = np.asarray(evaluate(jax.random.key(args.seed + 1)))
    print(f"eval_return={returns.mean():.1f}")


if __name__ == "__main__":
    main()
