"""memorax 1.0.1's recurrent PPO on one task, run by ``benchmarks/recurrent.py`` in the
separate virtual environment that holds memorax (never imported by rollax's process).

Usage: ``python _memorax_worker.py '<json spec>'`` with the keys ``task``, ``seeds``,
``budget``, ``chunk``, ``episodes``, ``threshold``, ``horizon`` and ``repo_src`` (rollax's
``src`` directory, for StatelessCartPole's dynamics). Progress goes to stderr; the last line
on stdout is one JSON object: the settings and one record per seed.

The network and hyperparameters are memorax's own GRU example at the 1.0.1 release
(``examples/architectures/ppo_gru.py``): observation MLP of 64 (orthogonal, gain 1.414), a
stack of two ``Residual(PreNorm(RNN(GRUCell(64))))`` + ``Residual(PreNorm(FFN(64, x4)))``
blocks, categorical head (orthogonal 0.01) and value head (orthogonal 1.0) on separate actor
and critic networks; 8 environments x 128 steps, 4 epochs of 4 minibatches (whole
sequences), gamma 0.99, lambda 0.95, clip 0.2 with a clipped value loss, entropy 0.01,
normalized advantages, Adam 3e-4 (eps 1e-5) after clipping the gradient norm to 1.0,
constant learning rate.
"""

from __future__ import annotations

import json
import sys
import warnings
from importlib.metadata import version
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from _common import Timed

# memorax asks for int64 action buffers; with x64 off JAX truncates them to int32 and warns.
warnings.filterwarnings("ignore", message="Explicitly requested dtype int64")

NUM_ENVS, NUM_STEPS = 8, 128
PPO_SETTINGS = dict(
    num_envs=NUM_ENVS,
    num_steps=NUM_STEPS,
    gamma=0.99,
    gae_lambda=0.95,
    num_minibatches=4,
    update_epochs=4,
    normalize_advantage=True,
    clip_coef=0.2,
    clip_vloss=True,
    ent_coef=0.01,
    vf_coef=0.5,
)
NETWORK = dict(d_model=64, ffn_expansion=4, num_layers=2, lr=3e-4, adam_eps=1e-5, max_grad_norm=1.0)


def stateless_cartpole(repo_src: str) -> tuple[Any, Any]:
    """rollax's StatelessCartPole behind gymnax's ``Environment`` interface (the 5-value
    ``step`` of gymnax 0.0.9, which memorax 1.0.1 unpacks): the 500-step limit is folded
    into ``done`` as gymnax's own CartPole does (``done = terminated or time >= 500``)."""
    if repo_src not in sys.path:
        sys.path.insert(0, repo_src)
    from flax import struct
    from gymnax.environments import environment, spaces

    from rollax.envs.memory import StatelessCartPole

    @struct.dataclass
    class State(environment.EnvState):  # fields: time (gymnax's), then inner
        inner: Any

    @struct.dataclass
    class Params(environment.EnvParams):
        max_steps_in_episode: int = 500

    class GymnaxStatelessCartPole(environment.Environment):
        def __init__(self) -> None:
            super().__init__()
            self.rollax_env = StatelessCartPole()
            self.rollax_params = self.rollax_env.default_params  # Gymnasium's constants

        @property
        def default_params(self) -> Params:
            return Params()

        def reset_env(self, key: jax.Array, params: Params) -> tuple[jax.Array, State]:
            state = State(
                time=jnp.int32(0), inner=self.rollax_env.reset_env(key, self.rollax_params)
            )
            return self.get_obs(state), state

        def step_env(self, key, state, action, params):
            inner, reward, terminated = self.rollax_env.step_env(
                state.inner, action, self.rollax_params
            )
            state = State(time=state.time + 1, inner=inner)
            done = self.is_terminal(state, params) | terminated
            info = {"discount": 1.0 - done.astype(jnp.float32)}
            obs = self.get_obs(state)
            return jax.lax.stop_gradient(obs), jax.lax.stop_gradient(state), reward, done, info

        def get_obs(self, state: State, params: Params | None = None, key=None) -> jax.Array:
            return self.rollax_env.observe(state.inner, self.rollax_params)

        def is_terminal(self, state: State, params: Params) -> jax.Array:
            return state.time >= params.max_steps_in_episode

        @property
        def name(self) -> str:
            return "StatelessCartPole-v1"

        @property
        def num_actions(self) -> int:
            return 2

        def action_space(self, params: Params | None = None) -> spaces.Discrete:
            return spaces.Discrete(2)

        def observation_space(self, params: Params) -> spaces.Box:
            space = self.rollax_env.observation_space
            return spaces.Box(jnp.asarray(space.low), jnp.asarray(space.high), (2,), jnp.float32)

    env = GymnaxStatelessCartPole()
    return env, env.default_params


def make_env(task: str, repo_src: str) -> tuple[Any, Any]:
    if task == "StatelessCartPole-v1":
        return stateless_cartpole(repo_src)
    from memorax.environments import make

    return make(f"gymnax::{task.removeprefix('gymnax/')}")


def make_agent(env: Any, env_params: Any, episodes: int) -> Any:
    """memorax's PPO with its GRU example's network and settings."""
    import flax.linen as nn
    import optax
    from memorax.algorithms import PPO, PPOConfig
    from memorax.networks import (
        FFN,
        MLP,
        RNN,
        FeatureExtractor,
        Network,
        PreNorm,
        Residual,
        Stack,
        heads,
    )

    d = NETWORK["d_model"]
    cfg = PPOConfig(name="PPO-GRU", num_eval_envs=episodes, **PPO_SETTINGS)
    features = FeatureExtractor(
        observation_extractor=MLP(features=(d,), kernel_init=nn.initializers.orthogonal(1.414))
    )
    cell = nn.GRUCell(
        features=d,
        kernel_init=nn.initializers.xavier_uniform(),
        bias_init=nn.initializers.zeros_init(),
    )
    gru = Residual(module=PreNorm(module=RNN(cell=cell)))
    ffn = Residual(
        module=PreNorm(module=FFN(features=d, expansion_factor=NETWORK["ffn_expansion"]))
    )
    torso = Stack(blocks=(gru, ffn) * NETWORK["num_layers"])
    actor = Network(
        feature_extractor=features,
        torso=torso,
        head=heads.Categorical(
            action_dim=env.action_space(env_params).n,
            kernel_init=nn.initializers.orthogonal(0.01),
        ),
    )
    critic = Network(
        feature_extractor=features,
        torso=torso,
        head=heads.VNetwork(kernel_init=nn.initializers.orthogonal(1.0)),
    )
    optimizer = optax.chain(
        optax.clip_by_global_norm(NETWORK["max_grad_norm"]),
        optax.adam(learning_rate=NETWORK["lr"], eps=NETWORK["adam_eps"]),
    )
    return PPO(
        cfg=cfg,
        env=env,
        env_params=env_params,
        actor_network=actor,
        critic_network=critic,
        actor_optimizer=optimizer,
        critic_optimizer=optimizer,
    )


def episode_returns(reward: np.ndarray, done: np.ndarray, running: np.ndarray) -> list[float]:
    """Returns of the episodes that end in a time-major ``(T, envs)`` block, continuing the
    per-environment sums ``running`` (updated in place) from the block before."""
    ended = []
    for r, d in zip(reward, done, strict=True):
        running += r
        ended.extend(running[d].tolist())
        running[d] = 0.0
    return ended


def run_seed(spec: dict[str, Any], seed: int) -> dict[str, Any]:
    """Compile, then train the budget in chunks; evaluate the final policy."""
    from memorax.algorithms import PPO

    jax.clear_caches()
    budget, chunk = spec["budget"], spec["chunk"]
    key = jax.random.key(seed)
    with Timed() as compile_time:
        env, env_params = make_env(spec["task"], spec["repo_src"])
        agent = make_agent(env, env_params, spec["episodes"])
        init = PPO.init.lower(agent, key).compile()
        key, state = init(key)
        train = PPO.train.lower(agent, key, state, chunk).compile()
        # Sampled actions over one episode's horizon: each environment's first episode.
        evaluate = PPO.evaluate.lower(agent, key, state, spec["horizon"], False).compile()
        jax.block_until_ready(state)
    num_params = sum(x.size for x in jax.tree.leaves((state.actor_params, state.critic_params)))

    train_s, steps, curve = 0.0, 0, []
    running = np.zeros(NUM_ENVS, np.float64)
    reached_at = reached_train_s = None
    while steps < budget:
        with Timed() as t:
            key, state, transitions = jax.block_until_ready(train(key, state))
        train_s += t.seconds
        steps += chunk
        # train() lays its transitions out as (update, step, env) in memory: time-major.
        reward = np.asarray(transitions.reward, np.float64).reshape(-1, NUM_ENVS)
        done = np.asarray(transitions.done, bool).reshape(-1, NUM_ENVS)
        ended = episode_returns(reward, done, running)
        mean = float(np.mean(ended)) if ended else None
        curve.append(mean)
        if reached_at is None and mean is not None and mean >= spec["threshold"]:
            reached_at, reached_train_s = steps, train_s
    key, transitions = evaluate(key, state)
    reward = np.asarray(transitions.reward, np.float64)
    done = np.asarray(transitions.done, bool)
    first_done = done.argmax(axis=0)  # (envs,): the step each first episode ends
    finished = done.any(axis=0)
    csum = np.cumsum(reward, axis=0)
    final = csum[first_done, np.arange(done.shape[1])][finished]
    return {
        "compile_s": compile_time.seconds,
        "train_s": train_s,
        "trained_steps": steps,
        "steps_per_s": steps / train_s,
        "reached": reached_at is not None,
        "steps_to_threshold": reached_at,
        "train_s_to_threshold": reached_train_s,
        "total_s_to_threshold": None
        if reached_at is None
        else compile_time.seconds + reached_train_s,
        "final_return": float(final.mean()) if final.size else None,
        "eval_episodes": int(final.size),
        "train_return_per_chunk": curve,
        "num_params": int(num_params),
    }


def main() -> None:
    spec = json.loads(sys.argv[1])
    import memorax  # noqa: F401  (fail early, before any timing, if it is missing)

    runs = []
    for seed in spec["seeds"]:
        run = run_seed(spec, seed)
        runs.append(run)
        print(f"  memorax gru seed {seed} done: compile {run['compile_s']:.1f} s, training "
              f"{run['train_s']:.1f} s", file=sys.stderr, flush=True)  # fmt: skip
    report = {
        "versions": {p: version(p) for p in ("memorax", "jax", "jaxlib", "flax", "gymnax")},
        "backend": jax.default_backend(),
        "ppo_settings": PPO_SETTINGS,
        "network": NETWORK,
        "runs": runs,
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
