"""What the training layer's devices and processes cost: PPO and DQN at a fixed global batch.

Each configuration runs in a fresh process whose CPU JAX splits into 4 devices (or, for two
processes, 2 each, joined on loopback with ``jax.distributed``). It trains for a fixed number
of environment steps per seed, repeated, after one compiling call, and reports the compile
time and the median steps per second.

Rows, all with the same global batch per seed:

- ``1 device, 1 shard``: the single-device program (no mesh, no shard axis);
- ``1 device, 4 shards``: the same 4 logical shards as the multi-device rows, on one device;
- ``2 devices`` and ``4 devices``: the shards spread over the data axis;
- ``2 processes x 2 devices``: the 4-device layout across two processes.

On one CPU the forced devices share the same cores, so this measures the layer's overhead,
not a speed-up: the ratio of each row to ``1 device, 1 shard`` is what the layer costs. No
peer library is run beside it: none of the JAX RL libraries trains one seed across devices
and processes with ``jax.distributed``.

    python benchmarks/scaling.py [--repeats 5] [--agents ppo dqn]

The last line is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

from _harness import Parser, emit

CONFIGS = {
    # CartPole's PPO with 64 environments per seed: 2,048 transitions per rollout.
    "ppo": dict(num_envs=64, num_steps=32, num_minibatches=4, num_epochs=4),
    # DQN with 16 environments per seed and 128-window gradient steps.
    "dqn": dict(
        num_envs=16, batch_size=128, buffer_size=65_536, learning_starts=1_024, gradient_steps=1
    ),
}
STEPS = {"ppo": 65_536, "dqn": 16_384}
ROWS = [  # (label, processes, devices, shards)
    ("1 device, 1 shard", 1, 1, 1),
    ("1 device, 4 shards", 1, 1, 4),
    ("2 devices", 1, 2, 4),
    ("4 devices", 1, 4, 4),
    ("2 processes x 2 devices", 2, 4, 4),
]


def worker(args: argparse.Namespace) -> None:
    import jax

    jax.config.update("jax_num_cpu_devices", args.local_devices)
    from rollax.runs import Cluster

    Cluster(
        coordinator=args.coordinator,
        num_processes=args.num_processes,
        process_id=args.process_id,
        timeout=120,
    ).join()
    from rollax.agents.dqn import DQNConfig, make_dqn
    from rollax.agents.ppo import PPOConfig, make_ppo

    config_type, make = {"ppo": (PPOConfig, make_ppo), "dqn": (DQNConfig, make_dqn)}[args.agent]
    steps = args.steps or STEPS[args.agent]
    settings = {**CONFIGS[args.agent], **({"num_envs": args.num_envs} if args.num_envs else {})}
    config = config_type(
        **settings,
        total_steps=steps * (args.repeats + 1),
        num_shards=args.shards,
        devices=args.devices,
    )
    agent = make(config, "CartPole-v1")
    start = time.perf_counter()
    state = agent.init(jax.random.key(0))
    state, metrics = agent.run(state, steps)  # compiles
    jax.block_until_ready(metrics)
    compile_s = time.perf_counter() - start
    rates = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        state, metrics = agent.run(state, steps)
        jax.block_until_ready(metrics)
        rates.append(steps / (time.perf_counter() - start))
    if jax.process_index() == 0:
        print(json.dumps({"compile_s": compile_s, "steps_per_s": statistics.median(rates)}))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure(
    agent: str,
    processes: int,
    devices: int,
    shards: int,
    repeats: int,
    steps: int | None,
    num_envs: int | None,
) -> dict:
    base = [sys.executable, __file__, "--worker", agent, "--devices", str(devices)]
    base += ["--shards", str(shards), "--repeats", str(repeats)]
    base += ["--steps", str(steps)] if steps else []
    base += ["--num-envs", str(num_envs)] if num_envs else []
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    if processes == 1:
        commands = [[*base, "--local-devices", "4"]]
    else:
        port = free_port()
        commands = [
            [*base, "--local-devices", str(devices // processes), "--coordinator",
             f"127.0.0.1:{port}", "--num-processes", str(processes), "--process-id", str(i)]
            for i in range(processes)
        ]  # fmt: skip
    procs = [
        subprocess.Popen(c, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for c in commands
    ]
    outs = [p.communicate(timeout=1800) for p in procs]
    for p, (_, err) in zip(procs, outs, strict=True):
        if p.returncode:
            raise RuntimeError(f"worker failed:\n{err[-3000:]}")
    return json.loads(outs[0][0].strip().splitlines()[-1])


def main() -> None:
    parser = Parser(__doc__).choice("--agents", CONFIGS).repeats(5)
    parser.steps(None, help="steps per timed call (default: 65,536 for PPO, 16,384 for DQN)")
    parser.add_argument(
        "--num-envs",
        type=int,
        default=None,
        help="environments per seed (default: 64 for "
        "PPO, 16 for DQN): more work per gradient step between the devices' gradient means",
    )
    parser.add_argument("--worker", choices=list(CONFIGS), help=argparse.SUPPRESS)
    parser.add_argument("--devices", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--local-devices", type=int, default=4, help=argparse.SUPPRESS)
    parser.add_argument("--shards", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--coordinator", default="", help=argparse.SUPPRESS)
    parser.add_argument("--num-processes", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--process-id", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        args.agent = args.worker
        worker(args)
        return
    results: dict = {}
    for agent in args.agents:
        print(f"{agent}: {args.steps or STEPS[agent]} steps per call, median of {args.repeats}")
        base = None
        for label, processes, devices, shards in ROWS:
            r = measure(agent, processes, devices, shards, args.repeats, args.steps, args.num_envs)
            base = base or r["steps_per_s"]
            r["cost_vs_single_device"] = base / r["steps_per_s"]
            results[f"{agent}/{label}"] = r
            print(
                f"  {label:<26} {r['steps_per_s']:>10,.0f} steps/s  compile "
                f"{r['compile_s']:5.1f} s  time x{r['cost_vs_single_device']:.2f}",
                flush=True,
            )
    figures = {"benchmark": "scaling", "repeats": args.repeats, "num_envs": args.num_envs}
    emit({**figures, "results": results})


if __name__ == "__main__":
    main()
