"""Brax environments inside rollax (extra ``rollax[brax]``).

``rollax.make("brax/<name>")`` (any name in ``brax.envs``, e.g. ``"brax/inverted_pendulum"``)
runs Brax's own ``reset``/``step`` inside rollax's ``VecEnv``: every reset draws fresh
randomness from the environment's key (no cached first state), the time limit is rollax's
(``truncated``, kept apart from Brax's ``done``, which becomes ``terminated``), ``final_obs`` is
the true last observation, and every autoreset mode and reset strategy works. Brax
environments have no parameters besides the time limit (1,000 steps, Brax's default).
"""

from __future__ import annotations

import contextlib
import io
import warnings
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rollax._struct import pytree_dataclass
from rollax.adapters._suite import SuiteEnv, suite_code, unknown_id
from rollax.envs import EnvParams
from rollax.spaces import Box

__all__ = ["BraxEnv", "BraxParams"]


@pytree_dataclass
class BraxParams(EnvParams):
    """Attributes: max_episode_steps: rollax's time limit (Brax's default of 1,000)."""

    max_episode_steps: Any = np.int32(1000)


class BraxEnv(SuiteEnv):
    """A Brax environment with rollax's semantics; its state is Brax's ``State``.

    Args:
        env_id: A Brax environment name, e.g. ``"inverted_pendulum"``.
        **kwargs: Passed to ``brax.envs.get_environment``.
    """

    prefix = "brax/"
    # A reset is a physics forward pass (Brax's pipeline_init): cheap on a CPU, but hundreds
    # of fused operations, each about a kernel launch on a GPU, far more than what pool adds
    # to a step. So on an accelerator resets are drawn in pool refills rather than every
    # step (as for MuJoCo Playground's tasks; docs/environments.md, "Reset strategies", has
    # the figures).
    costly_reset = True

    def __init__(self, env_id: str, **kwargs: Any) -> None:
        from brax import envs

        names = sorted(envs._envs)  # brax's registry has no public listing
        if env_id not in names:
            raise unknown_id("Brax", "brax/", env_id, names)
        self.env_id = env_id
        self._env = envs.get_environment(env_id, **kwargs)
        with suite_code():
            high = np.full((self._env.observation_size,), np.inf, np.float32)
            self._action_space = Box(-1.0, 1.0, (self._env.action_size,))
        self._observation_space = Box(-high, high, high.shape)

    @property
    def default_params(self) -> BraxParams:
        return BraxParams()

    def reset_env(self, key: jax.Array, params: BraxParams) -> Any:
        with suite_code():
            return self._env.reset(key)

    def step_env(self, state: Any, action: jax.Array, params: BraxParams) -> tuple:
        with suite_code():
            state = self._env.step(state, action)
        return state, jnp.asarray(state.reward, jnp.float32), state.done > 0.5

    def observe(self, state: Any, params: BraxParams) -> jax.Array:
        return jnp.asarray(state.obs, jnp.float32)


def brax_ids() -> list[str]:
    """``brax/<name>`` for every Brax environment (empty without Brax installed).

    Brax's import announces optional backends on stdout and deprecations of its
    dependencies: a listing keeps them quiet.
    """
    try:
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from brax import envs
    except ImportError:
        return []
    return ["brax/" + name for name in sorted(envs._envs)]
