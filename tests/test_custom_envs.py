"""Your own environment by import path, in Python and on the command line.

The environment lives in a module of the test's own directory, as a user's would: found as
``module:Class``, as ``module/Id`` (the module registers the id), or by id alone through a
package's ``rollax.envs`` entry point.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import rollax
from _signals import signal_after_rows
from rollax.envs import _registry

CORRIDOR = textwrap.dedent(
    '''
    """A corridor: walk right to the end for a reward of 1."""
    from typing import Any

    import jax
    import jax.numpy as jnp
    import numpy as np

    import rollax
    from rollax._struct import pytree_dataclass
    from rollax.envs import Environment, EnvParams
    from rollax.spaces import Box, Discrete


    @pytree_dataclass
    class CorridorParams(EnvParams):
        max_episode_steps: Any = np.int32(20)


    @pytree_dataclass
    class CorridorState:
        position: jax.Array


    class Corridor(Environment):
        def __init__(self, length: int = 4) -> None:
            self.length = length

        @property
        def name(self) -> str:
            return "Corridor"

        @property
        def default_params(self) -> CorridorParams:
            return CorridorParams()

        @property
        def observation_space(self) -> Box:
            return Box(0.0, float(self.length), (1,), jnp.float32)

        @property
        def action_space(self) -> Discrete:
            return Discrete(2)

        def reset_env(self, key, params):
            return CorridorState(position=jnp.zeros((), jnp.int32))

        def observe(self, state, params):
            return state.position.astype(jnp.float32).reshape(1)

        def step_env(self, state, action, params):
            position = jnp.clip(state.position + 2 * action - 1, 0, self.length)
            done = position == self.length
            return state.replace(position=position), done.astype(jnp.float32), done


    rollax.register("Corridor-v0", Corridor)
    '''
)

TINY = [
    "--num-envs", "4", "--num-steps", "16", "--num-epochs", "1", "--num-minibatches", "2",
    "--hidden-sizes", "8", "--no-progress", "--eval-episodes", "2",
]  # fmt: skip


@pytest.fixture
def user_dir(tmp_path, monkeypatch):
    """A directory holding the user's module, on ``sys.path``; the registry is restored."""
    (tmp_path / "corridor_env.py").write_text(CORRIDOR)
    monkeypatch.syspath_prepend(str(tmp_path))
    before = dict(_registry._REGISTRY)
    yield tmp_path
    _registry._REGISTRY.clear()
    _registry._REGISTRY.update(before)
    sys.modules.pop("corridor_env", None)


def test_module_and_class_builds_the_class_with_its_options(user_dir):
    env = rollax.make("corridor_env:Corridor", 3, length=6)
    assert env.env_id == "corridor_env:Corridor" and env.env.length == 6
    assert env.num_envs == 3


def test_module_and_id_imports_the_module_that_registers_it(user_dir):
    env = rollax.make("corridor_env/Corridor-v0")
    assert env.env_id == "corridor_env/Corridor-v0" and env.env.name == "Corridor"
    assert "Corridor-v0" in rollax.registered_envs()  # the module registered it


@pytest.mark.parametrize(
    ("env_id", "message"),
    [
        ("no_such_module:Env", "cannot import module 'no_such_module': ModuleNotFoundError"),
        ("no_such_module/Env-v0", "cannot import module 'no_such_module'"),
        ("corridor_env:Corridoor", "has no callable 'Corridoor'. Its environments: Corridor"),
        ("corridor_env/Corridor-v9", "registered no 'Corridor-v9'"),
        ("bad module:Env", "'bad module' is not a module name"),
    ],
)
def test_an_environment_that_cannot_be_found_is_a_message(user_dir, env_id, message):
    with pytest.raises(ValueError, match=message):
        rollax.make(env_id)


def test_an_error_inside_the_user_s_module_is_named(user_dir):
    (user_dir / "broken_env.py").write_text("import rollax\nraise RuntimeError('oops')\n")
    with pytest.raises(ValueError, match=r"cannot import module 'broken_env': RuntimeError: oops"):
        rollax.make("broken_env:Env")


def _installed_package(root: Path) -> Path:
    """A package as pip installs it: its module and its dist-info, entry points included."""
    (root / "corridor_pkg").mkdir(parents=True)
    (root / "corridor_pkg" / "__init__.py").write_text(CORRIDOR.replace(
        'rollax.register("Corridor-v0", Corridor)', ""))  # fmt: skip
    info = root / "corridor_pkg-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: corridor-pkg\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[rollax.envs]\nPkgCorridor-v0 = corridor_pkg:Corridor\n"
    )
    return root


def test_an_installed_package_s_entry_point_is_found_by_id(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(_installed_package(tmp_path)))
    before = dict(_registry._REGISTRY)
    try:
        assert "PkgCorridor-v0" in rollax.registered_envs()
        assert "corridor_pkg" not in sys.modules  # imported on first use only
        assert rollax.make("PkgCorridor-v0", length=2).env.length == 2
    finally:
        _registry._REGISTRY.clear()
        _registry._REGISTRY.update(before)
        sys.modules.pop("corridor_pkg", None)


# --- the command line, in a subprocess, from the user's directory ---


def _cli(*args: str, cwd: Path, env: dict, check: bool = True) -> subprocess.CompletedProcess:
    # The console script, as a user runs it (not `python -m`, which puts the working
    # directory on sys.path by itself).
    script = Path(sys.executable).with_name("rollax")
    proc = subprocess.run([str(script), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


# One worker runs the module's command lines.
pytestmark = pytest.mark.xdist_group("custom_envs")


@pytest.fixture(scope="module")
def cli_env():
    env = dict(os.environ)
    env["JAX_PLATFORMS"] = "cpu"
    env.pop("PYTHONPATH", None)
    return env


@pytest.mark.processes
@pytest.mark.timeout(600)
def test_a_module_class_trains_stops_resumes_and_evaluates_from_the_cli(tmp_path, cli_env):
    (tmp_path / "corridor_env.py").write_text(CORRIDOR)
    run_dir = tmp_path / "run"
    script = Path(sys.executable).with_name("rollax")
    proc = subprocess.Popen(
        [str(script), "train", "ppo", "--env", "corridor_env:Corridor", *TINY,
         "--total-steps", "262144", "--log-every", "512", "--run-dir", str(run_dir)],
        cwd=tmp_path, env=cli_env, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    metrics = run_dir / "metrics.csv"
    signal_after_rows(proc, metrics)  # a header and two rows
    # The run directory says how the environment was found; resume and eval need nothing
    # more (here with a shorter budget).
    config = json.loads((run_dir / "config.json").read_text())
    assert config["env"] == "corridor_env:Corridor"
    stopped = int(metrics.read_text().splitlines()[-1].split(",")[0])
    budget = str(stopped + 1024)
    _cli("resume", str(run_dir), "--total-steps", budget, "--no-progress", cwd=tmp_path,
         env=cli_env)  # fmt: skip
    out = _cli("eval", str(run_dir), "--episodes", "2", cwd=tmp_path, env=cli_env)
    assert json.loads(out.stdout)["env_steps"] == stopped + 1024
    assert b"\r\n" not in metrics.read_bytes()  # one line ending after the resume
    # From another directory the module is not found: a message naming it.
    proc = _cli("eval", str(run_dir), cwd=tmp_path.parent, env=cli_env, check=False)
    assert proc.returncode == 2
    assert "cannot import module 'corridor_env': ModuleNotFoundError" in proc.stderr


@pytest.mark.processes
def test_a_module_id_and_an_installed_id_train_and_evaluate_from_the_cli(tmp_path, cli_env):
    (tmp_path / "corridor_env.py").write_text(CORRIDOR)
    run_dir = tmp_path / "run"
    _cli("train", "ppo", "--env", "corridor_env/Corridor-v0", *TINY, "--total-steps", "1024",
         "--run-dir", str(run_dir), cwd=tmp_path, env=cli_env)  # fmt: skip
    result = json.loads((run_dir / "eval.json").read_text())
    assert np.isfinite(result["deterministic"]["mean"])
    _cli("plot", str(run_dir), cwd=tmp_path, env=cli_env)
    proc = _cli("train", "ppo", "--env", "no_such_module:Env", "--no-progress", cwd=tmp_path,
                env=cli_env, check=False)  # fmt: skip
    assert proc.returncode == 2 and "cannot import module 'no_such_module'" in proc.stderr
    # rollax check: status 0 when it passes, 1 with the findings listed.
    assert "passes every check" in _cli("check", "corridor_env:Corridor", cwd=tmp_path,
                                        env=cli_env).stderr  # fmt: skip
    returns = "done.astype(jnp.float32), done"
    broken = CORRIDOR.replace(returns, "done.astype(jnp.float32), done.astype(jnp.int32)")
    (tmp_path / "broken_env.py").write_text(broken)
    proc = _cli("check", "broken_env/Corridor-v0", cwd=tmp_path, env=cli_env, check=False)
    assert proc.returncode == 1, proc.stderr
    assert "Corridor-v0: step_env: returns terminated as int32(); expected bool()" in proc.stdout
    # An installed package's environment, by id alone.
    installed = _installed_package(tmp_path / "site")
    env = {**cli_env, "PYTHONPATH": str(installed)}
    assert "PkgCorridor-v0" in _cli("envs", cwd=tmp_path, env=env).stdout.split()
    _cli("train", "ppo", "--env", "PkgCorridor-v0", *TINY, "--total-steps", "512",
         "--run-dir", str(tmp_path / "pkg"), cwd=tmp_path, env=env)  # fmt: skip
