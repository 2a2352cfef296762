"""The benchmark scripts run end to end at a tiny size and end with one JSON line.

Speed is never asserted here (the machine is noisy); this only keeps the scripts working.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.processes  # each script runs as a process


def _report(script: str, args: str, timeout: int = 600) -> dict:
    """Run ``benchmarks/<script>`` with ``args`` in a subprocess; its last line, parsed."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *args.split()],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize(
    ("script", "args", "keys"),
    [
        pytest.param(
            "env_step.py",
            "",
            {"rollax_same_step", "rollax_no_reset", "gymnax_autoreset"},
            marks=pytest.mark.extra("gymnax", "gymnasium"),
        ),
        pytest.param(
            "autoreset.py",
            # CartPole only: Maze runs through the same code, and its strategies are tested
            # in tests/test_reset_strategies.py.
            "--envs CartPole-v1",
            {"pool", "compact", "cached", "floor_steps_per_s"},
            marks=pytest.mark.extra("gymnax"),
        ),
        pytest.param(
            "adapters.py",
            "",
            {"rollax_next_step", "gymnasium_numpy", "gymnax_wrapper"},
            marks=pytest.mark.extra("gymnax", "gymnasium", "torchrl"),
        ),
    ],
)
def test_benchmark_ends_with_json(script, args, keys):
    report = _report(script, f"--sizes 8 --repeats 1 --steps 20 {args}")
    rows = [row for name, row in report["results"].items() if name.endswith("8")]
    assert rows and all(keys <= set(row) for row in rows)
    if script == "adapters.py":
        assert set(report["torchrl_results"]["CartPole-v1/8"]) >= {"rollax_torchrl"}


@pytest.mark.slow
@pytest.mark.extra("sb3")
def test_adapters_benchmark_sb3_part_ends_with_json():
    args = "--parts sb3 --sb3-train-steps 256 --sb3-repeats 1 --sb3-sizes 8 --sb3-step-calls 20"
    report = _report("adapters.py", f"{args} --repeats 1")["sb3_results"]
    assert report["cpu_sync_dispatch"]["jax_cpu_async_dispatch"] is False
    assert set(report["train_ppo"]["median_wall_s"]) == {"rollax_sb3", "sb3_dummy_vec_env"}
    assert {"ratio_vs_sb3_dummy_vec_env", "target_met"} <= set(report["step"]["CartPole-v1/8"])


@pytest.mark.slow
@pytest.mark.extra("rejax", "gymnax")
def test_ppo_benchmark_ends_with_json():
    args = "--seeds 1 --batch-seeds 2 --total-steps 5000 --repeats 1 --throughput-steps 2500"
    report = _report("ppo_cartpole.py", args, timeout=900)
    assert set(report["throughput_steps_per_s"]) == {"rollax", "rejax"}
    for name in ("rollax_1seed", "rejax_1seed", "rollax_1seed_warm_cache"):
        assert report[name][0]["compile_s"] > 0
    assert "ratios_rollax_over_rejax" in report["summary"]


@pytest.mark.slow
@pytest.mark.extra("sb3", "rliable")
def test_host_benchmark_ends_with_json():
    report = _report("host.py", "--tiny", timeout=900)
    assert set(report["iqm_seconds"]) == {"rollax", "sb3"}
    for runs in report["runs"].values():
        assert len(runs) == 2 and all(run["seconds"] > 0 for run in runs)


@pytest.mark.slow
@pytest.mark.extra("flashbax")
def test_buffers_benchmark_ends_with_json():
    args = "--num-envs 8 --repeats 1 --quick --kinds image"
    report = _report("buffers.py", args, timeout=600)
    table = report["results"]["image"]
    figures = {"add_per_call", "add_scan", "sample", "sample_sequence", "update_priorities"}
    for lib in ("rollax", "flashbax"):
        assert figures | {"prioritized_sample", "memory", "memory_no_donate"} <= set(table[lib])
        assert table[lib]["memory"]["storage_bytes"] == table[lib]["storage_bytes"]
    assert figures | {"memory", "memory_no_donate"} <= set(table["ratio"])
    successors = table["successors"]
    for variant in ("full", "compact"):
        assert {"add_per_call", "sample", "sample_sequence", "memory"} <= set(successors[variant])
    assert successors["compact"]["storage_bytes"] < successors["full"]["storage_bytes"]


@pytest.mark.slow
@pytest.mark.extra("rejax", "gymnax")
def test_offpolicy_benchmark_ends_with_json():
    # TD3 and PQN (rollouts, no buffer to fill): the gpu.py smoke below runs DQN and SAC
    # through this script's solvers.
    args = (
        "--algos td3 pqn --seeds 1 --td3-total 1200 --td3-chunk 600 --td3-tput-steps 300 "
        "--pqn-total 4096 --pqn-chunk 2048 --pqn-tput-steps 2048 --episodes 2 --repeats 1"
    )
    report = _report("offpolicy.py", args, timeout=600)
    for algo, chunks in (("td3", 2), ("pqn", 2)):
        runs = report[algo]
        for lib in ("rollax", "rejax"):
            assert runs[lib][0]["compile_s"] > 0
            assert 1 <= len(runs[lib][0]["return_per_chunk"]) <= chunks
            assert runs["throughput_steps_per_s"][lib] > 0
        assert "throughput" in runs["summary"]["ratios_rollax_over_rejax"]
    assert report["rejax_settings"]["pqn"]["num_steps"] == 128


@pytest.mark.slow
@pytest.mark.extra("gymnasium", "pygame")
def test_pixels_benchmark_ends_with_json():
    args = (
        "--sizes 8 --steps 5 --repeats 1 --gym-frames 5 --cap-s 1 --chunk 2048 --episodes 2 "
        "--no-augment-run"
    )
    report = _report("pixels.py", args, timeout=900)
    assert report["render"]["8"]["rollax_pixel_frames_per_s"] > 0
    assert report["render"]["gymnasium_rgb_array_frames_per_s"] > 0
    assert report["pixel_cartpole"]["augment_true"]["curve_steps_train_s_return"]


@pytest.mark.slow
@pytest.mark.extra("rejax", "gymnax", "rliable")
def test_returns_benchmark_ends_with_json(tmp_path):
    # One row: the Brax row compiles Brax's PPO for about a minute, too long for a smoke test.
    # PQN's too (rejax's PQN), named pqn:CartPole-v1: another agent through the same row code
    # (TD3's row, td3:Pendulum-v1, is that code again; TD3 against rejax runs in the
    # offpolicy.py smoke).
    tasks = "CartPole-v1 pqn:CartPole-v1"
    args = f"--tasks {tasks} --seeds 3 --budget 2048 --episodes 2 --reps 200"
    report = _report("returns.py", args, timeout=600)
    saved = tmp_path / "returns.log"
    saved.write_text(json.dumps(report))
    again = _report("returns.py", f"--from {saved} --reps 200")
    assert again["results"] == report["results"]  # the same returns give the same intervals
    row = report["results"]["CartPole-v1"]
    assert row["rollax"]["steps"] == 2048 and row["rejax"]["steps"] >= 2048  # whole rollouts
    for lib in ("rollax", "rejax"):
        assert len(row[lib]["returns"]) == 3
        iqm, low, high = row["iqm"][lib]
        assert low <= iqm <= high
    p, low, high = row["probability_of_improvement"]
    assert 0 <= low <= high <= 1 and 0 <= p <= 1
    assert row["verdict"] in ("above", "tied", "below")
    assert row["above_threshold"]["rollax"] in range(4) and row["ratio_wall_per_seed"] > 0
    pqn = report["results"]["pqn:CartPole-v1"]
    assert pqn["rollax"]["steps"] == 2048 and len(pqn["rejax"]["returns"]) == 3
    assert report["skipped"] == {}


@pytest.mark.slow
def test_scaling_benchmark_ends_with_json():
    report = _report("scaling.py", "--agents dqn --repeats 1 --steps 2048")["results"]
    assert set(report) == {
        f"dqn/{row}"
        for row in ("1 device, 1 shard", "1 device, 4 shards", "2 devices", "4 devices",
                    "2 processes x 2 devices")
    }  # fmt: skip
    assert all(r["steps_per_s"] > 0 for r in report.values())


@pytest.mark.slow
def test_recurrent_benchmark_ends_with_json():
    # rollax's agents only (memorax runs from a venv of its own that a test does not build).
    args = (
        "--skip-memorax --tasks StatelessCartPole-v1 RepeatPrevious-v0 --seeds 1 "
        "--steps 4096 --chunk 2048 --episodes 2 --variants gru"
    )
    tasks = _report("recurrent.py", args)["tasks"]
    for task in ("StatelessCartPole-v1", "RepeatPrevious-v0"):
        summary = tasks[task]["summary"]["rollax_gru"]
        assert tasks[task]["budget"] == 4096 and summary["median_steps_per_s"] > 0
        assert summary["median_final_return"] is not None


@pytest.mark.slow
def test_sweep_benchmark_ends_with_json():
    report = _report("sweep.py", "--algos ppo --repeats 1 --total-steps 1024 --values 1")
    row = report["results"]["ppo"]
    assert row["members"] == 2 and set(row["final_return"]) == {
        "learning_rate=1e-3 ent_coef=0",
        "learning_rate=1e-3 ent_coef=0.01",
    }
    assert {"one_program_s", "separate_runs_s", "ratio_one_program_vs_separate"} <= set(row)


@pytest.mark.slow
def test_pbt_benchmark_ends_with_json():
    report = _report("pbt.py", "--tiny --tasks maze --repeats 1 --episodes 4 --reps 200")
    row = report["tasks"]["maze"]
    assert len(row["grid_returns"]) == len(row["pbt_returns"]) == 1
    assert {"grid_iqm", "pbt_iqm", "pbt_minus_grid", "ratio_seconds"} <= set(row)


@pytest.mark.slow
@pytest.mark.extra("jumanji")
def test_worlds_benchmark_ends_with_json():
    # Jumanji's Maze only: Craftax's programs take minutes to compile on this CPU (the
    # adapter itself is tested in tests/test_worlds.py).
    args = "--suites jumanji --sizes 16 --steps 3 --repeats 1 --limit 2 --strategies pool"
    row = _report("worlds.py", args + " --staggered")["jumanji 16"]
    assert row["default"] == "pool"
    for regime in ("natural", "limit 2", "staggered 2"):
        for variant in ("rollax pool", "jumanji AutoResetWrapper"):
            assert {"steps_per_s", "freshness", "episodes"} <= set(row[f"{regime} | {variant}"])
    assert row["limit 2 | rollax pool"]["freshness"] == 1.0
    # In 3 steps: all 16 episodes end together at step 2 under the limit; staggered, half of
    # the batch ends on every step.
    for variant in ("rollax pool", "jumanji AutoResetWrapper"):
        assert row[f"limit 2 | {variant}"]["episodes"] == 16
        assert row[f"staggered 2 | {variant}"]["episodes"] == 3 * 8


@pytest.mark.slow
@pytest.mark.extra("gymnax", "rejax", "craftax", "playground", "atari")
def test_gpu_benchmark_runs_every_section_tiny_on_the_cpu():
    # What a session lent a GPU runs first: every section must get there without an error.
    report = _report("gpu.py", "--tiny --repeats 1", timeout=900)
    sections = {"stepping", "ppo", "offpolicy", "craftax", "pixels", "sweep", "agents",
                "playground", "pbt", "host"}  # fmt: skip
    assert report["backend"] == "cpu" and report["tiny"] is True
    assert {name: report[name].get("error") for name in sections} == dict.fromkeys(sections)
    assert report["stepping"]["CartPole-v1@64"]["gymnax"] > 0
    assert report["craftax"]["authors"]["steps_per_s"] > 0  # the one Craftax config at --tiny
    assert set(report["sweep"]) >= {"rollax_wall_s", "rejax_wall_s", "members"}
    agents = report["agents"]
    assert agents["ratio_pqn_wall"] > 0 and agents["ratio_td3_Pendulum-v1_wall"] > 0
    assert "td3_Pendulum-v1_error" not in agents
    assert report["pbt"]["ratio_wall"] > 0 and report["pbt"]["pbt"]["chosen"] in range(8)
    host = report["host"]
    assert host["sync_steps_per_s"] > 0 and host["overlapped_over_larger_part"] > 0
    playground = report["playground"]
    resets = playground["CartpoleBalance@8"]
    assert resets["limit 16 | default / playground cached"] > 0
    assert resets[f"limit 16 | rollax {resets['default']}"]["freshness"] == 1.0
    assert resets["limit 16 | playground cached"]["freshness"] == 0.0
    assert playground["ratio_ppo_CartpoleBalance_wall"] > 0
    assert len(playground["ppo_CartpoleBalance_brax"]["returns"]) == 1
