"""PPO in PyTorch on rollax's CartPole-v1 through the Gymnasium adapter (CleanRL style).

The environments are a rollax batch behind ``gymnasium.vector.VectorEnv`` in SAME_STEP
autoreset mode: when an episode ends, ``obs`` is already the next episode's first observation
and ``info["final_obs"]`` holds the true last one. A time-limit ending (``truncated``) therefore
bootstraps from the value of ``final_obs``; only ``terminated`` cuts the bootstrap.

    python examples/torch_ppo_gymnasium.py --total-steps 100000

Prints the mean return of the last episodes during training and of a greedy evaluation at the
end (last line: ``eval_return=<mean>``). Needs ``rollax[gymnasium]`` and ``torch``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from torch import nn

from rollax.adapters.gymnasium import make_vec


def layer(n_in: int, n_out: int, std: float = np.sqrt(2)) -> nn.Linear:
    """A linear layer with orthogonal weights scaled by ``std`` and zero bias."""
    linear = nn.Linear(n_in, n_out)
    nn.init.orthogonal_(linear.weight, std)
    nn.init.constant_(linear.bias, 0.0)
    return linear


class Agent(nn.Module):
    """Separate 64x64 tanh actor and critic."""

    def __init__(self, obs_dim: int, num_actions: int) -> None:
        super().__init__()
        self.critic = nn.Sequential(
            layer(obs_dim, 64), nn.Tanh(), layer(64, 64), nn.Tanh(), layer(64, 1, 1.0)
        )
        self.actor = nn.Sequential(
            layer(obs_dim, 64), nn.Tanh(), layer(64, 64), nn.Tanh(), layer(64, num_actions, 0.01)
        )

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        """``(B, obs_dim) -> (B,)``."""
        return self.critic(obs).squeeze(-1)

    def act(self, obs: torch.Tensor, action: torch.Tensor | None = None) -> tuple:
        """``(action, log_prob, entropy, value)``; samples an action unless one is given."""
        dist = torch.distributions.Categorical(logits=self.actor(obs))
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.value(obs)


def main() -> None:
    """Train, report, evaluate."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total-steps", type=int, default=100_000)
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--num-steps", type=int, default=128)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--lr", type=float, default=2.5e-3)
    parser.add_argument("--eval-episodes", type=int, default=32)
    args = parser.parse_args()
    gamma, lam, clip, epochs, minibatches = 0.99, 0.95, 0.2, 4, 4

    torch.manual_seed(args.seed)
    envs = make_vec("CartPole-v1", args.num_envs, autoreset_mode="same_step")
    n, t = args.num_envs, args.num_steps
    obs_dim = envs.single_observation_space.shape[0]
    agent = Agent(obs_dim, int(envs.single_action_space.n))
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.lr, eps=1e-5)

    obs_buf = torch.zeros((t, n, obs_dim))
    act_buf = torch.zeros((t, n), dtype=torch.long)
    logp_buf, rew_buf, val_buf, next_val_buf = (torch.zeros((t, n)) for _ in range(4))
    term_buf, done_buf = torch.zeros((t, n)), torch.zeros((t, n))
    returns, lengths = np.zeros(n), np.zeros(n, np.int64)
    finished: list[float] = []

    obs_np, _ = envs.reset(seed=args.seed)
    obs = torch.tensor(obs_np)  # a copy: the adapter's arrays are read-only views
    updates = args.total_steps // (n * t)
    start = time.perf_counter()
    for update in range(updates):
        for g in optimizer.param_groups:
            g["lr"] = args.lr * (1.0 - update / updates)
        for step in range(t):
            with torch.no_grad():
                action, logp, _, value = agent.act(obs)
            obs_np, reward, terminated, truncated, info = envs.step(action.numpy())
            next_obs = torch.tensor(obs_np)  # a copy: the adapter's arrays are read-only views
            with torch.no_grad():
                next_value = agent.value(next_obs)
                if "final_obs" in info:  # episodes ended: bootstrap from the true last obs
                    ended = np.flatnonzero(info["_final_obs"])
                    finals = torch.tensor(np.stack(info["final_obs"][ended]))
                    next_value[ended] = agent.value(finals)
            obs_buf[step], act_buf[step], logp_buf[step], val_buf[step] = obs, action, logp, value
            rew_buf[step] = torch.as_tensor(reward, dtype=torch.float32)
            term_buf[step] = torch.as_tensor(terminated, dtype=torch.float32)
            next_val_buf[step] = next_value
            done = terminated | truncated
            done_buf[step] = torch.as_tensor(done, dtype=torch.float32)
            returns += reward
            lengths += 1
            finished += returns[done].tolist()
            returns[done], lengths[done] = 0.0, 0
            obs = next_obs

        # GAE: terminated cuts the bootstrap; truncated bootstraps from next_val (final_obs);
        # an ended episode never passes its advantage on to the next one.
        advantages = torch.zeros((t, n))
        carry = torch.zeros(n)
        for step in reversed(range(t)):
            delta = rew_buf[step] + gamma * next_val_buf[step] * (1 - term_buf[step])
            carry = delta - val_buf[step] + gamma * lam * (1 - done_buf[step]) * carry
            advantages[step] = carry
        targets = advantages + val_buf

        b_obs, b_act = obs_buf.reshape(-1, obs_dim), act_buf.reshape(-1)
        b_logp, b_adv, b_tgt = logp_buf.reshape(-1), advantages.reshape(-1), targets.reshape(-1)
        size = n * t
        for _ in range(epochs):
            order = torch.randperm(size)
            for idx in order.split(size // minibatches):
                _, logp, entropy, value = agent.act(b_obs[idx], b_act[idx])
                adv = (b_adv[idx] - b_adv[idx].mean()) / (b_adv[idx].std() + 1e-8)
                ratio = (logp - b_logp[idx]).exp()
                policy_loss = -torch.min(ratio * adv, ratio.clamp(1 - clip, 1 + clip) * adv)
                loss = (
                    policy_loss.mean()
                    + 0.5 * 0.5 * ((value - b_tgt[idx]) ** 2).mean()
                    - 0.01 * entropy.mean()
                )
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
                optimizer.step()
        if finished and (update + 1) % 10 == 0:
            steps = (update + 1) * size
            print(
                f"steps {steps:>7}  recent return {np.mean(finished[-20:]):6.1f}  "
                f"{steps / (time.perf_counter() - start):,.0f} steps/s",
                flush=True,
            )
    print(f"eval_return={evaluate(agent, args.eval_episodes, args.seed + 1):.1f}")


def evaluate(agent: Agent, episodes: int, seed: int) -> float:
    """Mean return of the first episode of ``episodes`` environments, acting greedily."""
    envs = make_vec("CartPole-v1", episodes, autoreset_mode="same_step")
    obs, _ = envs.reset(seed=seed)
    total, running = np.zeros(episodes), np.ones(episodes, bool)
    while running.any():
        with torch.no_grad():
            action = agent.actor(torch.tensor(obs)).argmax(-1).numpy()
        obs, reward, terminated, truncated, _ = envs.step(action)
        total += reward * running
        running &= ~(terminated | truncated)
    return float(total.mean())


if __name__ == "__main__":
    main()
