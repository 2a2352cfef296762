"""DQN on CartPole-v1 in one file, from rollax's public pieces (PureJaxRL style).

The whole training run is one jitted ``lax.scan``: step the environments, store each
transition with its true successor, and after ``learning_starts`` take gradient steps on
n-step windows sampled from the replay buffer. What rollax supplies and this file does not
rewrite:

- ``rollax.make``: environments whose ``timestep.final_obs`` is the true last observation
  when an episode ends (``obs`` is already the next episode's first one);
- ``SequenceBuffer``: replay sized in transitions, windows that never cross the write head;
- ``nstep_return``: sums that stop at ``terminated`` and bootstrap ``truncated`` from the
  final observation (CartPole's 500-step limit is a truncation, not a failure);
- ``QNetwork``, ``q_learning_loss``, ``next_state_value``: the network and DQN's pure loss.

    python examples/dqn_cartpole.py --total-steps 100000

Prints the mean return of episodes during training and of a greedy evaluation at the end
(last line: ``eval_return=<mean>``). ``rollax train dqn`` runs the same algorithm with run
directories, checkpoints and resume.
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

import rollax
from rollax.agents.losses import next_state_value, q_learning_loss
from rollax.buffers import SequenceBuffer, Transition
from rollax.networks import QNetwork
from rollax.ops import nstep_return


def main() -> None:
    """Train, report the return along the way, evaluate the greedy policy."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total-steps", type=int, default=100_000)
    parser.add_argument("--num-envs", type=int, default=10)
    parser.add_argument("--n-step", type=int, default=1)
    parser.add_argument("--eval-episodes", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    num_envs, gamma, batch_size = args.num_envs, 0.99, 100
    learning_starts, gradient_steps, polyak = 5_000, 5, 0.98
    iterations = args.total_steps // num_envs
    env = rollax.make("CartPole-v1", num_envs=num_envs)
    network = QNetwork(num_actions=2, hidden_sizes=(64, 64), activation="swish", dueling=True)
    buffer = SequenceBuffer(capacity=50_000, num_envs=num_envs, sequence_length=args.n_step)
    optimizer = optax.chain(optax.clip(10.0), optax.adam(1e-3))

    def epsilon(step: jax.Array) -> jax.Array:
        """1 to 0.05 linearly over the first half of the budget."""
        frac = jnp.clip(step.astype(jnp.float32) / (0.5 * args.total_steps), 0.0, 1.0)
        return 1.0 + frac * (0.05 - 1.0)

    def act(params, obs, key, eps):
        greedy = jnp.argmax(network.apply(params, obs), axis=-1).astype(jnp.int32)
        k_explore, k_random = jax.random.split(key)
        explore = jax.random.uniform(k_explore, greedy.shape) < eps
        return jnp.where(explore, jax.random.randint(k_random, greedy.shape, 0, 2), greedy)

    def gradient_step(carry, key):
        params, target_params, opt_state, replay = carry
        batch = buffer.sample(replay, key, batch_size).item  # leaves (batch, n_step, ...)
        ret = nstep_return(batch.reward, batch.terminated, batch.truncated, gamma)
        next_obs = batch.next_obs[jnp.arange(batch_size), ret.index]
        bootstrap = next_state_value(
            network.apply(params, next_obs), network.apply(target_params, next_obs)
        )
        target = ret.reward + ret.discount * bootstrap

        def loss_fn(params):
            q = network.apply(params, batch.obs[:, 0])
            return q_learning_loss(q, batch.action[:, 0], target, loss="mse")[0]

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        return (params, target_params, opt_state, replay), loss

    def iteration(carry, key):
        params, target_params, opt_state, replay, env_state, obs, step = carry
        k_act, k_learn = jax.random.split(key)
        action = act(params, obs, k_act, epsilon(step))
        env_state, ts = env.step(env_state, action)
        replay = buffer.add(replay, Transition.from_step(obs, action, ts))
        step = step + num_envs

        def learn(carry):
            carry, losses = jax.lax.scan(
                gradient_step, carry, jax.random.split(k_learn, gradient_steps)
            )
            params, target_params, opt_state, replay = carry
            target_params = jax.tree.map(
                lambda t, p: polyak * t + (1.0 - polyak) * p, target_params, params
            )
            return (params, target_params, opt_state, replay), losses.mean()

        carry = (params, target_params, opt_state, replay)
        carry, loss = jax.lax.cond(
            step >= learning_starts, learn, lambda c: (c, jnp.zeros((), jnp.float32)), carry
        )
        ended = jnp.where(ts.done, ts.info["episode_return"], jnp.nan)
        return (*carry, env_state, ts.obs, step), (ended, loss)

    @jax.jit
    def train(key):
        k_env, k_net, k_steps = jax.random.split(key, 3)
        env_state, ts = env.reset(k_env)
        params = network.init(k_net, ts.obs[0])
        example = Transition(
            obs=ts.obs[0], action=jnp.int32(0), reward=jnp.float32(0.0),
            terminated=jnp.bool_(False), truncated=jnp.bool_(False), next_obs=ts.obs[0],
        )  # fmt: skip
        carry = (params, params, optimizer.init(params), buffer.init(example), env_state,
                 ts.obs, jnp.zeros((), jnp.int32))  # fmt: skip
        carry, (ended, losses) = jax.lax.scan(
            iteration, carry, jax.random.split(k_steps, iterations)
        )
        return carry[0], ended, losses

    start = time.perf_counter()
    params, ended, losses = jax.block_until_ready(train(jax.random.key(args.seed)))
    seconds = time.perf_counter() - start
    ended = np.asarray(ended).reshape(10, -1)  # ten slices of the run, in order
    for i, chunk in enumerate(ended):
        print(f"steps {(i + 1) * args.total_steps // 10:>7}: return {np.nanmean(chunk):6.1f}")
    print(f"{args.total_steps} steps in {seconds:.1f} s (compile included); "
          f"final TD loss {float(np.asarray(losses)[-1]):.3f}")  # fmt: skip

    # Greedy evaluation: whole episodes, no autoreset, up to the 500-step limit.
    eval_env = rollax.make("CartPole-v1", num_envs=args.eval_episodes, autoreset_mode="disabled")

    @jax.jit
    def evaluate(params, key):
        env_state, ts = eval_env.reset(key)

        def step(carry, _):
            env_state, obs, done, total = carry
            action = jnp.argmax(network.apply(params, obs), axis=-1).astype(jnp.int32)
            env_state, ts = eval_env.step(env_state, action)
            return (
                env_state,
                ts.obs,
                done | ts.done,
                total + jnp.where(done, 0.0, ts.reward),
            ), None

        zeros = jnp.zeros(args.eval_episodes)
        carry = (env_state, ts.obs, zeros.astype(bool), zeros)
        return jax.lax.scan(step, carry, None, 500)[0][-1]

    returns = np.asarray(evaluate(params, jax.random.key(args.seed + 1)))
    print(f"eval_return={returns.mean():.1f}")


if __name__ == "__main__":
    main()
