"""rollax in the user's process: importing it changes nothing, and ``rollax info`` reports.

Each check runs in a fresh Python process, since the suite's own process has long imported
rollax (and conftest.py applies the CPU-scheduler workaround there).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from rollax._xla_cpu import SCHEDULER_FLAG, scheduler_deadlocks

# The environment without the XLA and JAX settings this suite or the user may have made.
CLEAN_ENV = {
    k: v
    for k, v in os.environ.items()
    if k not in ("XLA_FLAGS", "JAX_PLATFORMS", "ROLLAX_CACHE_DIR")
}


def python(code: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", code], env=CLEAN_ENV, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_importing_rollax_leaves_the_environment_as_importing_jax_and_gymnasium_leave_it():
    out = python(
        "import importlib.util, json, os\n"
        "import jax\n"
        "if importlib.util.find_spec('gymnasium'): import gymnasium\n"
        "before = dict(os.environ)\n"
        "import rollax, rollax.agents.ppo, rollax.agents.dqn, rollax.agents.sac\n"
        "import rollax.training, rollax.buffers, rollax.cli\n"
        "jax.numpy.zeros(1).block_until_ready()\n"
        "after = dict(os.environ)\n"
        "print(json.dumps({k: [before.get(k), after.get(k)] for k in before.keys() | after.keys()"
        " if before.get(k) != after.get(k)}))\n"
    )
    assert json.loads(out.strip().splitlines()[-1]) == {}


def test_the_cpu_scheduler_workaround_is_a_call_that_sets_the_flag_only_where_needed():
    out = python(
        "import os, rollax\n"
        "print(rollax.avoid_cpu_scheduler_deadlock(), os.environ.get('XLA_FLAGS', ''))\n"
    )
    applied, _, flags = out.strip().partition(" ")
    assert applied == str(scheduler_deadlocks())
    assert (f"{SCHEDULER_FLAG}=false" in flags) == scheduler_deadlocks()


def test_rollax_info_names_the_backend_the_versions_and_the_flags_it_set():
    proc = subprocess.run(
        [sys.executable, "-m", "rollax", "info", "--json"],
        env=CLEAN_ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert info["backend"] == "cpu" and info["devices"][0].startswith("cpu:0")
    assert {"jax", "jaxlib", "flax", "optax"} <= info["versions"].keys()
    # The command line applied the workaround exactly where the installed jaxlib needs it.
    assert (
        any(SCHEDULER_FLAG in f for f in info["xla_flags_set_by_rollax"]) == scheduler_deadlocks()
    )
    assert info["compilation_cache_dir"].endswith(os.path.join("rollax", "jax"))

    text = subprocess.run(
        [sys.executable, "-m", "rollax", "info"], env=CLEAN_ENV, capture_output=True, text=True
    ).stdout
    assert "backend: cpu" in text and f"jax: {info['versions']['jax']}" in text


@pytest.mark.extra("torch")
def test_the_tensorboard_writer_starts_without_importing_torch_which_imports_after():
    # tensorboardX would import PyTorch (1.6 s of every `rollax train`) for its type hints.
    code = (
        "import sys, tempfile\n"
        "from rollax.runs._sinks import TensorBoardSink\n"
        "sink = TensorBoardSink(__import__('pathlib').Path(tempfile.mkdtemp()), ('x',), None)\n"
        "sink.write(1, {'x': 2.0}); sink.close()\n"
        "print('torch' in sys.modules)\n"
        "import torch\n"
        "from tensorboardX.x2num import make_np\n"
        "print(float(make_np(torch.ones(1))[0]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "1.0"]


def test_the_command_line_gives_mujoco_an_offscreen_context_without_a_display(monkeypatch):
    from rollax.cli import offscreen_gl_for_mujoco

    for name in ("MUJOCO_GL", "DISPLAY", "WAYLAND_DISPLAY"):
        monkeypatch.delenv(name, raising=False)
    offscreen_gl_for_mujoco()
    assert os.environ.get("MUJOCO_GL") == ("egl" if sys.platform == "linux" else None)
    monkeypatch.setenv("MUJOCO_GL", "osmesa")  # the user's choice stays
    offscreen_gl_for_mujoco()
    assert os.environ["MUJOCO_GL"] == "osmesa"
    monkeypatch.delenv("MUJOCO_GL")
    monkeypatch.setenv("DISPLAY", ":0")  # a display: MuJoCo's default context works
    offscreen_gl_for_mujoco()
    assert "MUJOCO_GL" not in os.environ
