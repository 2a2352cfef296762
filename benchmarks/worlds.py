"""Fresh worlds at what price: rollax's reset strategies against the suites' own autoresets.

On Craftax-Classic-Symbolic, where a reset generates a whole world, at each batch size:

- rollax's fresh strategies (``every_step``, ``on_done``, ``compact``, ``pool``; the default
  is ``pool``, on every backend for an environment with a costly reset);
- **Craftax's own autoreset** (``auto_reset=True``): a world generated for every environment
  on every step, kept where one ended;
- **the optimistic reset of Craftax's baselines**, rebuilt from its description: each step
  generates ``num_envs / reset_ratio`` worlds (``--reset-ratio``, 16) and hands them to the
  environments that ended, in order; when more end in one step, several start from the same
  world.

And on Jumanji's Maze-v0 (a reset costs some 40 steps): rollax's strategies against Jumanji's
``AutoResetWrapper`` under ``vmap`` (a reset computed for every environment at every step).

And on MuJoCo Playground's physics tasks (``--playground-tasks``, CartpoleBalance and
WalkerWalk): rollax's strategies against ``wrap_for_brax_training``, what Playground's Brax
PPO and SAC train on, with its default reset (``cached``: an ended episode returns to the
state its slot was first reset to) and with ``full_reset=True`` (a reset computed for every
environment at every step). A start's fingerprint is its ``qpos`` and ``qvel``, bit for bit.

Figures per variant (medians over ``--repeats`` rollouts of ``--steps`` steps with a table of
random actions, in a jitted ``lax.scan``, compilation excluded; the variants of a row are
timed in turn, one rollout each per round, so that a slow minute of the machine's falls on
all of them alike):

- **steps/s**;
- **freshness**: the fraction of episodes started by an autoreset whose first state was never
  the first state of an earlier episode (a fingerprint of the whole world: Craftax's map,
  Jumanji's maze and positions, Playground's positions and velocities), from a separate
  rollout that records them.

Two regimes, the same programs (params are data in every library): ``natural``, the suites'
own time limits (a random agent's episodes end when it dies), and ``limit L``
(``--limit``, 16): every episode cut at L steps, so that many end on the same step (all of
them where no episode ends earlier, as in DM Control's tasks). With ``--staggered``, a third:
``staggered L``, the same limit with the batch's episode counters started at ``i % L``, so
that ``N / L`` environments end on every step, as when episodes end at random times (falls,
deaths). Also the cost of one world generation against a step's, per environment, and for
Playground the cost of one batched reset against a step of the batch (``start_cost``).

The last line printed is one JSON object with every figure.

Usage:
    python benchmarks/worlds.py [--sizes 256 1024] [--steps 128] [--repeats 3]
        [--limit 16] [--reset-ratio 16] [--suites craftax jumanji]
        [--slow-steps N] [--autoreset-steps N] [--strategies pool compact ...]
        [--playground-tasks CartpoleBalance WalkerWalk] [--staggered]
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import rollax
from _common import interleaved_median_seconds, median_seconds
from _harness import Parser, banner, emit
from rollax.adapters._suite import suite_code

FRESH = ("every_step", "on_done", "compact", "pool")
CRAFTAX = "Craftax-Classic-Symbolic-v1"
MAZE = "Maze-v0"


# ---------------------------------------------------------------------------- fingerprints


def fingerprint(*grids: jax.Array) -> jax.Array:
    """Two 32-bit hashes of each environment's arrays: uint32 ``(N, 2)``.

    Every array's ``(N, ...)`` entries are flattened, weighted by fixed random odd numbers and
    summed modulo 2**32, twice with different weights: two worlds share a fingerprint only
    if they are equal (or with probability about 2**-64).
    """
    flat = jnp.concatenate([g.reshape(g.shape[0], -1).astype(jnp.uint32) for g in grids], 1)
    weights = jax.random.bits(jax.random.key(123), (2, flat.shape[1]), jnp.uint32) | 1
    return jnp.stack([(flat * w).sum(axis=1, dtype=jnp.uint32) for w in weights], axis=1)


def freshness(first: np.ndarray, done: np.ndarray, later: np.ndarray) -> dict[str, Any]:
    """The fraction of episodes started by a reset whose first state is new.

    Args:
        first: The initial batch's fingerprints, ``(N, 2)``.
        done: Which environments ended at each step, bool ``(T, N)``.
        later: Each environment's fingerprint after each step, ``(T, N, 2)``; where ``done``,
            the first state of a new episode.
    """
    seen = {tuple(f) for f in first}
    fresh = total = 0
    for t in range(done.shape[0]):
        for f in later[t][done[t]]:
            total += 1
            key = tuple(f)
            fresh += key not in seen
            seen.add(key)
    return {"episodes": total, "fresh": fresh, "freshness": fresh / total if total else None}


# ---------------------------------------------------------------------------- variants
#
# Each variant is ``(init, step, worlds_of, params_for, stagger)`` for a batch:
# ``init(key, params)`` gives a state, ``step(state, key, actions, params)`` steps every
# environment and gives ``(state, done)``, ``worlds_of(state)`` the suite's state whose worlds
# are fingerprinted, ``params_for(limit)`` the params of a regime (``None``: the suite's own
# time limit), and ``stagger(state, limit)`` the state with environment i's step counter at
# ``i % limit``. Params are arguments of the compiled programs, so the regimes share them.


def staggered_counts(n: int, limit: int, like: Any) -> jax.Array:
    """Step counters ``i % limit`` for ``n`` environments, in the dtype of ``like``."""
    return (jnp.arange(n) % limit).astype(jnp.asarray(like).dtype)


def rollax_variant(env_id: str, n: int, strategy: str | None) -> tuple:
    env = rollax.make(env_id, num_envs=n, reset_strategy=strategy)
    # The suite's own state: Playground's is the core itself, the others' wrap it.
    playground = env_id.startswith("playground/")

    def step(state, key, actions, params):
        state, ts = env.step(state, actions, params)
        return state, ts.done

    def params_for(limit):
        params = env.default_params
        return params if limit is None else params.replace(max_episode_steps=limit)

    def stagger(state, limit):
        return state.replace(episode_length=staggered_counts(n, limit, state.episode_length))

    return (
        lambda key, params: env.reset(key, params)[0],
        step,
        (lambda state: state.core) if playground else (lambda state: state.core.inner),
        params_for,
        stagger,
    )


def _craftax_params_for(env: Any) -> Callable:
    def params_for(limit):
        params = env.default_params
        return params if limit is None else params.replace(max_timesteps=limit)

    return params_for


def _craftax_stagger(n: int) -> Callable:
    return lambda state, limit: state.replace(timestep=staggered_counts(n, limit, state.timestep))


def craftax_autoreset_variant(n: int) -> tuple:
    """Craftax's own autoreset: a world generated for every environment on every step."""
    from craftax.craftax_env import make_craftax_env_from_name

    env = make_craftax_env_from_name(CRAFTAX, auto_reset=True)

    def init(key, params):
        return jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(key, n), params)[1]

    def step(state, key, actions, params):
        _, state, _, done, _ = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
            jax.random.split(key, n), state, actions, params
        )
        return state, done

    return init, step, lambda state: state, _craftax_params_for(env), _craftax_stagger(n)


def craftax_optimistic_variant(n: int, reset_ratio: int) -> tuple:
    """The optimistic reset of Craftax's baselines, rebuilt from its description."""
    from craftax.craftax_env import make_craftax_env_from_name

    env = make_craftax_env_from_name(CRAFTAX, auto_reset=False)
    worlds = n // reset_ratio

    def init(key, params):
        return jax.vmap(env.reset_env, in_axes=(0, None))(jax.random.split(key, n), params)[1]

    def step(state, key, actions, params):
        k_step, k_reset = jax.random.split(key)
        _, stepped, _, done, _ = jax.vmap(env.step_env, in_axes=(0, 0, 0, None))(
            jax.random.split(k_step, n), state, actions, params
        )
        _, fresh = jax.vmap(env.reset_env, in_axes=(0, None))(
            jax.random.split(k_reset, worlds), params
        )
        # The k-th environment that ended takes world k, modulo the worlds generated.
        rank = jnp.cumsum(done) - 1
        world = jnp.where(done, rank % worlds, 0)
        handed = jax.tree.map(lambda x: x[world], fresh)
        state = jax.tree.map(
            lambda new, old: jnp.where(done.reshape((n,) + (1,) * (old.ndim - 1)), new, old),
            handed,
            stepped,
        )
        return state, done

    return init, step, lambda state: state, _craftax_params_for(env), _craftax_stagger(n)


def jumanji_autoreset_variant(n: int, limit: int | None) -> tuple:
    """Jumanji's AutoResetWrapper under vmap: a reset for every environment at every step.

    Jumanji's time limit is a constructor argument: one variant per regime.
    """
    import jumanji
    from jumanji.wrappers import AutoResetWrapper

    env = AutoResetWrapper(jumanji.make(MAZE, **({"time_limit": limit} if limit else {})))

    def step(state, key, actions, params):
        state, timestep = jax.vmap(env.step)(state, actions)
        return state, timestep.last()

    return (
        lambda key, params: jax.vmap(env.reset)(jax.random.split(key, n))[0],
        step,
        lambda state: state,
        lambda limit: None,
        lambda state, limit: state.replace(step_count=staggered_counts(n, limit, state.step_count)),
    )


def playground_wrapper_variant(task: str, n: int, limit: int | None, full_reset: bool) -> tuple:
    """Playground's ``wrap_for_brax_training``: its cached first state, or ``full_reset``.

    The episode length is a constructor argument: one variant per regime.
    """
    from mujoco_playground import registry, wrapper

    with suite_code():
        env = registry.load(task, config_overrides={"impl": "jax"})
    natural = registry.get_default_config(task).get("episode_length", 1000)
    env = wrapper.wrap_for_brax_training(
        env, episode_length=limit or natural, full_reset=full_reset
    )

    def step(state, key, actions, params):
        state = env.step(state, actions)
        return state, state.done > 0.5

    return (
        # Raw uint32 keys, (n, 2): the kind Brax's training hands the wrapper.
        lambda key, params: env.reset(jax.random.key_data(jax.random.split(key, n))),
        step,
        lambda state: state,
        lambda limit: None,
        # Brax's EpisodeWrapper counts the episode's steps in info["steps"].
        lambda state, limit: state.replace(
            info={**state.info, "steps": staggered_counts(n, limit, state.info["steps"])}
        ),
    )


# ---------------------------------------------------------------------------- measures


def craftax_world(inner: Any) -> jax.Array:
    return fingerprint(inner.map)


def maze_world(inner: Any) -> jax.Array:
    pos = (inner.agent_position.row, inner.agent_position.col)
    goal = (inner.target_position.row, inner.target_position.col)
    return fingerprint(inner.walls, *(jnp.asarray(p)[:, None] for p in (*pos, *goal)))


def physics_world(state: Any) -> jax.Array:
    """A Playground state's positions and velocities, their float32 bits fingerprinted."""
    data = state.data
    return fingerprint(
        *(jax.lax.bitcast_convert_type(x, jnp.uint32) for x in (data.qpos, data.qvel))
    )


def prepare(
    variant: tuple, actions: jax.Array, world: Callable, regimes: dict
) -> dict[str, tuple[Callable[[], Any], dict[str, Any]]]:
    """For each regime: a call that runs the timed rollout (replaying ``actions``), and the
    freshness figures of a separate rollout that records every first state."""
    init, step, worlds_of, params_for, stagger = variant
    steps, n = actions.shape[:2]
    keys = jax.random.split(jax.random.key(2), steps)

    @jax.jit
    def rollout(state, params):
        def body(state, inputs):
            key, action = inputs
            state, done = step(state, key, action, params)
            return state, done.sum()

        return jax.lax.scan(body, state, (keys, actions))

    @jax.jit
    def recorded(state, params):
        def body(state, inputs):
            key, action = inputs
            state, done = step(state, key, action, params)
            return state, (done, world(worlds_of(state)))

        return world(worlds_of(state)), jax.lax.scan(body, state, (keys, actions))[1]

    out = {}
    with suite_code():
        start = jax.jit(init)
        for regime, limit in regimes.items():
            params = params_for(limit)
            state = start(jax.random.key(0), params)
            if regime.startswith("staggered"):
                state = stagger(state, limit)
            first, (done, later) = jax.device_get(recorded(state, params))
            run = functools.partial(rollout, state, params)
            out[regime] = (run, {"steps": steps * n, **freshness(first, done, later)})
    return out


def timed(
    prepared: dict[str, dict[str, tuple[Callable, dict]]], repeats: int, alone: set[str]
) -> dict[str, dict[str, dict[str, Any]]]:
    """Each variant's figures per regime with its steps/s: the variants in ``alone`` timed
    once each, the others in turn, ``repeats`` rounds (their ratios are what is compared)."""
    runs = {
        (name, regime): run
        for name, regimes in prepared.items()
        for regime, (run, _) in regimes.items()
    }
    together = {key: run for key, run in runs.items() if key[0] not in alone}
    with suite_code():
        seconds = interleaved_median_seconds(together, repeats)
        seconds.update(
            {key: median_seconds(run, 1) for key, run in runs.items() if key[0] in alone}
        )
    return {
        name: {
            regime: {
                "steps_per_s": figures["steps"] / seconds[name, regime],
                "seconds": seconds[name, regime],
                **{k: v for k, v in figures.items() if k != "steps"},
            }
            for regime, (_, figures) in regimes.items()
        }
        for name, regimes in prepared.items()
    }


def world_cost(n: int, repeats: int) -> dict[str, float]:
    """Milliseconds per environment: a Craftax step, a world generated in one ``vmap`` of the
    whole batch, and one generated in rollax's chunks."""
    from craftax.craftax_env import make_craftax_env_from_name

    from rollax.adapters.craftax import CraftaxEnv

    env = make_craftax_env_from_name(CRAFTAX, auto_reset=False)
    params = env.default_params
    keys = jax.random.split(jax.random.key(0), n)
    chunk = CraftaxEnv(CRAFTAX).reset_chunk
    with suite_code():
        reset_all = jax.jit(lambda k: jax.vmap(env.reset_env, in_axes=(0, None))(k, params)[1])
        state = reset_all(keys)
        actions = jax.random.randint(jax.random.key(1), (n,), 0, 17)
        step = jax.jit(
            lambda k, s, a: jax.vmap(env.step_env, in_axes=(0, 0, 0, None))(k, s, a, params)[1]
        )
        out = {"step_ms": 1e3 * median_seconds(lambda: step(keys, state, actions), repeats) / n}
        chunked = jax.jit(
            lambda k: jax.lax.map(lambda key: env.reset_env(key, params)[1], k, batch_size=chunk)
        )
        if chunk is not None:
            out["world_chunked_ms"] = 1e3 * median_seconds(lambda: chunked(keys), repeats) / n
        out["world_one_vmap_ms"] = 1e3 * median_seconds(lambda: reset_all(keys), 1) / n
    best = min(v for k, v in out.items() if k.startswith("world"))
    out["world_over_step"] = best / out["step_ms"]
    return out


def start_cost(task: str, n: int, limit: int, repeats: int) -> dict[str, float]:
    """Milliseconds for ``n`` of a Playground task: one batched reset (the task's own, under
    ``vmap``: what a fresh strategy computes once per episode and the cached reset never) and
    one step of the batch (a ``limit``-step rollout from fresh starts, per step), and
    ``fresh_share``, the reset's cost over the episode's ``limit`` steps: the physics fresh
    starts add to an episode of that length."""
    from mujoco_playground import registry

    with suite_code():
        env = registry.load(task, config_overrides={"impl": "jax"})
        reset = jax.jit(lambda key: jax.vmap(env.reset)(jax.random.split(key, n)))
        state = reset(jax.random.key(0))
        actions = jax.random.uniform(jax.random.key(1), (limit, n, env.action_size), minval=-1)
        rollout = jax.jit(lambda s: jax.lax.scan(lambda s, a: (jax.vmap(env.step)(s, a), ()), s,
                                                 actions)[0])  # fmt: skip
        out = {
            "reset_ms": 1e3 * median_seconds(lambda: reset(jax.random.key(2)), repeats),
            "step_ms": 1e3 * median_seconds(lambda: rollout(state), repeats) / limit,
        }
    out["reset_over_step"] = out["reset_ms"] / out["step_ms"]
    out["fresh_share"] = out["reset_over_step"] / limit
    return out


def measure(
    suite: str,
    env_id: str,
    n: int,
    *,
    steps: int,
    repeats: int,
    limit: int,
    strategies: tuple[str, ...] | list[str] | None = FRESH,
    reset_ratio: int = 16,
    slow_steps: int | None = None,
    autoreset_steps: int | None = None,
    natural: bool = True,
    staggered: bool = False,
    also: tuple[str, ...] = (),
) -> dict[str, Any]:
    """One row of the table: every variant of ``suite`` on ``env_id`` at ``n`` environments,
    in both regimes (``natural`` and ``limit <limit>``), keyed ``"<regime> | <variant>"``,
    with rollax's default strategy under ``"default"`` (and under ``"cost"`` Craftax's world
    cost, Playground's start cost).
    ``strategies``: rollax's strategies to run (``None``: the default one only), and
    ``also`` more strategies beside them (``strategies=None, also=("every_step",)``: the
    default, whichever it is, and ``every_step``).
    ``natural=False`` leaves the natural regime out (where no episode ends in ``steps``);
    ``staggered=True`` adds ``staggered <limit>``."""
    regimes: dict[str, int | None] = {"natural": None} if natural else {}
    regimes[f"limit {limit}"] = limit
    if staggered:
        regimes[f"staggered {limit}"] = limit
    world = {"craftax": craftax_world, "jumanji": maze_world, "playground": physics_world}[suite]
    probe = rollax.make(env_id, num_envs=n)
    table = jax.vmap(probe.sample_actions)(jax.random.split(jax.random.key(1), steps))
    row: dict[str, Any] = {"default": probe.reset_strategy}
    strategies = (probe.reset_strategy,) if strategies is None else tuple(strategies)
    strategies += tuple(s for s in also if s not in strategies)
    if suite in ("craftax", "playground"):
        row["cost"] = (
            world_cost(n, repeats)
            if suite == "craftax"
            else start_cost(env_id.partition("/")[2], n, limit, repeats)
        )
        print(f"{env_id} {n}: {row['cost']}", flush=True)
    # Each variant with the regimes it runs in.
    variants: dict[str, Any] = {
        f"rollax {s}": (rollax_variant(env_id, n, s), regimes) for s in strategies
    }
    if suite == "craftax":
        variants["craftax autoreset"] = (craftax_autoreset_variant(n), regimes)
        variants["optimistic"] = (craftax_optimistic_variant(n, reset_ratio), regimes)
    elif suite == "jumanji":
        for regime, cut in regimes.items():
            variants[f"jumanji AutoResetWrapper ({regime})"] = (
                jumanji_autoreset_variant(n, cut),
                {regime: cut},
            )
    else:
        task = env_id.partition("/")[2]
        for regime, cut in regimes.items():
            for reset, full in (("cached", False), ("full_reset", True)):
                variants[f"playground {reset} ({regime})"] = (
                    playground_wrapper_variant(task, n, cut, full),
                    {regime: cut},
                )
    prepared: dict[str, dict[str, tuple[Callable, dict]]] = {}
    alone = set()  # timed once, with their own number of steps
    for name, (variant, only) in variants.items():
        length = steps
        if name in ("rollax every_step", "craftax autoreset") and slow_steps:
            length = slow_steps
            alone.add(name)
        if name == "craftax autoreset" and autoreset_steps:
            length = autoreset_steps
            alone.add(name)
            # Where no episode can end, its speed is the natural regime's.
            only = {r: v for r, v in only.items() if v is None or length > v}
        prepared[name] = prepare(variant, table[:length], world, only)
    for name, by_regime in timed(prepared, repeats, alone).items():
        name = name.split(" (")[0]
        for regime, figures in by_regime.items():
            row[f"{regime} | {name}"] = figures
            fresh = figures["freshness"]
            print(f"{suite:7s} {n:5d} {regime:12s} {name:26s} "
                  f"{figures['steps_per_s']:>12,.0f} steps/s  freshness "
                  f"{'-' if fresh is None else f'{fresh:.4f}'} of "
                  f"{figures['episodes']} episodes", flush=True)  # fmt: skip
    return row


def main() -> None:
    parser = Parser(__doc__).sizes(256, 1024).steps(128).repeats(3)
    parser.add_argument("--limit", type=int, default=16, help="the limit regime's time limit")
    parser.add_argument("--reset-ratio", type=int, default=16)
    parser.add_argument("--strategies", nargs="+", default=list(FRESH), choices=FRESH,
                        help="rollax's strategies to run (default: every fresh one)")  # fmt: skip
    parser.choice("--suites", ["craftax", "jumanji", "playground"])
    parser.add_argument("--playground-tasks", nargs="+",
                        default=["CartpoleBalance", "WalkerWalk"],
                        help="MuJoCo Playground's tasks (the playground suite)")  # fmt: skip
    parser.add_argument("--slow-steps", type=int, default=None,
                        help="steps, timed once, of the variants that generate every world "
                        "on every step (rollax every_step, Craftax's autoreset); default: "
                        "--steps and --repeats")  # fmt: skip
    parser.add_argument("--autoreset-steps", type=int, default=None,
                        help="steps, timed once, of Craftax's own autoreset (default: as "
                        "--slow-steps); on the CPU it takes 45 s a step at 1,024")  # fmt: skip
    parser.add_argument("--staggered", action="store_true",
                        help="also the staggered regime: the limit's episodes started at "
                        "staggered counts, so that N / limit end on every step")  # fmt: skip
    args = parser.parse_args()
    banner()
    results: dict[str, Any] = {"args": vars(args), "backend": jax.default_backend()}
    tasks = {"craftax": [f"craftax/{CRAFTAX}"], "jumanji": [f"jumanji/{MAZE}"],
             "playground": [f"playground/{t}" for t in args.playground_tasks]}  # fmt: skip
    for suite, env_id, n in [(s, e, n) for s in args.suites for e in tasks[s] for n in args.sizes]:
        row = measure(
            suite, env_id, n, steps=args.steps, repeats=args.repeats, limit=args.limit,
            strategies=args.strategies, reset_ratio=args.reset_ratio,
            slow_steps=args.slow_steps, autoreset_steps=args.autoreset_steps,
            staggered=args.staggered,
        )  # fmt: skip
        results[f"{suite} {n}" if suite != "playground" else f"{env_id} {n}"] = row
    print_ratios(results)
    emit(results)


def ratios(row: dict[str, Any]) -> dict[str, float]:
    """rollax's default strategy against each of the suite's own variants in one row of
    :func:`measure`: the ratio of steps/s, keyed ``"<regime> | default / <variant>"`` (none
    where the default strategy was not among those measured)."""
    out = {}
    for key, figures in row.items():
        regime, _, variant = key.partition(" | ")
        if not variant or variant.startswith(("rollax", "default")):
            continue
        mine = row.get(f"{regime} | rollax {row['default']}")
        if mine is not None:
            out[f"{regime} | default / {variant}"] = mine["steps_per_s"] / figures["steps_per_s"]
    return out


def print_ratios(results: dict[str, Any]) -> None:
    """rollax's default strategy against each suite's own, per size and regime."""
    for name, row in results.items():
        if not isinstance(row, dict) or "default" not in row:
            continue
        for key, ratio in ratios(row).items():
            regime, _, variant = key.partition(" | default / ")
            mine, theirs = row[f"{regime} | rollax {row['default']}"], row[f"{regime} | {variant}"]
            print(f"{name} {regime}: rollax {row['default']} / {variant} = {ratio:.2f}x "
                  f"steps/s, freshness {mine['freshness']} against "
                  f"{theirs['freshness']}")  # fmt: skip


if __name__ == "__main__":
    main()
