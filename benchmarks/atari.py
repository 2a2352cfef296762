"""PPO on Atari's Breakout through envpool: rollax against CleanRL's JAX envpool script.

The peer is CleanRL's ``ppo_atari_envpool_xla_jax_scan.py``, which the user fetches from
CleanRL's repository (``--cleanrl-script PATH``; it is not on PyPI). It runs unchanged but for
the edits in :data:`PEER_CHANGES`, each needed by envpool 1.2.5, flax 0.12 or current JAX and
none changing what it computes; the script applies them to a copy and says which it made.
The peer steps envpool inside its compiled rollout (envpool's XLA custom call), with gym's
``done`` (termination or truncation) and envpool's reset step among its transitions.

Both train PPO with the Nature CNN on ``Breakout-v5`` with CleanRL's settings (8
environments, 128 steps, 4 epochs of 4 minibatches; envpool's episodic life and reward
clipping), each in a process of its own, for the same ``--steps``. The figure is steps per
second of the whole process: from its start (imports and compiling included) to its end.
rollax runs ``rollax train ppo --env envpool/Breakout-v5`` (its preset is CleanRL's settings)
synchronously, and with ``--acting-lag 1 --actor-device 1`` (acting on a second CPU device
beside the learner).

The peer runs in rollax's ``envpool`` and ``bench`` extras (``tensorboard`` is in ``bench``;
with the first change it needs no ``gym``). The last line printed is one JSON object with
every figure.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from _harness import Parser, banner, emit, ratio

PEER_CHANGES = (
    ("import gym\n", "import gymnasium as gym\n",
     "envpool 1.2.5's pools (env_type='gym' too) have Gymnasium's spaces"),
    ("        envs.num_envs = num_envs\n", "",
     "envpool 1.2.5 has num_envs, read-only, of the same value"),
    ("        envs.single_action_space = envs.action_space\n", "",
     "envpool 1.2.5 has single_action_space, read-only, of the same value"),
    ("        envs.single_observation_space = envs.observation_space\n", "",
     "envpool 1.2.5 has single_observation_space, read-only, of the same value"),
    ("        envs.is_vector_env = True\n", "", "read-only in envpool 1.2.5"),
    ("    critic_params: flax.core.FrozenDict\n",
     "    critic_params: flax.core.FrozenDict\n\n    def __contains__(self, key):\n"
     "        return False\n",
     "flax 0.12's TrainState.create asks `key in params`"),
    ("        handle, (next_obs, reward, next_done, info) = step_env(handle, action)\n",
     "        handle, (next_obs, reward, terminated, truncated, info) = step_env(handle, action)\n"
     "        next_done = terminated | truncated\n"
     "        info['TimeLimit.truncated'] = truncated\n",
     "envpool 1.2.5 steps as Gymnasium (five values): gym's done and info rebuilt"),
    ("    next_obs = envs.reset()\n", "    next_obs, _ = envs.reset()\n",
     "envpool 1.2.5 resets as Gymnasium (observation and info)"),
    ("jax.tree_map(", "jax.tree.map(", "jax.tree_map is gone from current JAX"),
)  # fmt: skip
"""``(old, new, why)``: the peer's edits, applied to every occurrence of ``old``."""


def patched_peer(script: Path, into: Path) -> Path:
    """A copy of CleanRL's script in ``into`` with :data:`PEER_CHANGES` made.

    Raises:
        ValueError: a change whose text the script lacks (another version of it).
    """
    text = script.read_text()
    for old, new, why in PEER_CHANGES:
        if old not in text:
            raise ValueError(f"--cleanrl-script {script} lacks {old.strip()!r} ({why}).")
        text = text.replace(old, new)
    path = into / "ppo_atari_envpool_xla_jax_scan.py"
    path.write_text(text)
    return path


def rollax_command(steps: str) -> list[str]:
    """``rollax train``'s PPO on envpool's Breakout for ``steps`` steps (its preset)."""
    return [sys.executable, "-m", "rollax", "train", "ppo", "--env", "envpool/Breakout-v5",
            "--total-steps", steps, "--no-progress", "--eval-episodes", "0",
            "--checkpoint-every", steps]  # fmt: skip


def timed(command: list[str], cwd: Path) -> float:
    """Seconds from starting ``command`` to its end (raises where it fails)."""
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "JAX_PLATFORMS": "cpu"})  # fmt: skip
    seconds = time.perf_counter() - start
    if done.returncode:
        raise RuntimeError(f"{command[:4]} failed:\n{done.stderr[-3000:]}")
    return seconds


def main() -> None:
    args = Parser(__doc__).repeats(1).steps(10_240, help="environment steps of each run")
    args.tiny("1,024 steps (one iteration): a smoke test")
    args.add_argument("--cleanrl-script", type=Path, required=True,
                      help="CleanRL's ppo_atari_envpool_xla_jax_scan.py, fetched")  # fmt: skip
    options = args.parse_args()
    steps = 1024 if options.tiny else options.steps
    banner(f"PPO on envpool's Breakout-v5, {steps} steps: rollax and CleanRL's script")
    for _, _, why in PEER_CHANGES:
        print(f"peer change: {why}")
    rollax = rollax_command(str(steps))
    runs = {
        "rollax_sync": rollax,
        "rollax_overlapped": [*rollax, "--acting-lag", "1", "--actor-device", "1"],
    }
    seconds: dict[str, list[float]] = {name: [] for name in (*runs, "cleanrl")}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        peer = patched_peer(options.cleanrl_script, work)
        runs["cleanrl"] = [sys.executable, str(peer), "--total-timesteps", str(steps), "--no-cuda"]
        for repeat in range(options.repeats):
            for name, command in runs.items():
                if name.startswith("rollax"):
                    command = [*command, "--run-dir", str(work / f"{name}-{repeat}")]
                seconds[name].append(timed(command, work))
                print(f"{name:18s} run {repeat}: {seconds[name][-1]:7.1f} s, "
                      f"{steps / seconds[name][-1]:7.1f} steps/s", flush=True)  # fmt: skip
    median = {name: float(np.median(s)) for name, s in seconds.items()}
    per_s = {name: steps / s for name, s in median.items()}
    report = {
        "steps": steps,
        "seconds": seconds,
        "median_steps_per_s": per_s,
        "ratio_sync": ratio(per_s["rollax_sync"], per_s["cleanrl"]),
        "ratio_overlapped": ratio(per_s["rollax_overlapped"], per_s["cleanrl"]),
        "peer_changes": [why for _, _, why in PEER_CHANGES],
    }
    print(f"rollax/CleanRL steps per second: synchronous {report['ratio_sync']}, "
          f"overlapped {report['ratio_overlapped']}")  # fmt: skip
    emit(report)


if __name__ == "__main__":
    main()
