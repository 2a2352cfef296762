"""Host libraries with batches of their own, in C++ threads: ALE's ``AtariVectorEnv`` and envpool.

Both step a whole batch in one call and give Atari's frames channels first, ``(4, 84, 84)``
uint8; rollax's agents read images as ``"pixels/<camera>"`` entries, channels last, so the
frames come as ``{"pixels/frames": (84, 84, 4)}`` (:func:`frames`).

- **ALE** (``"ale/<Game>-v5"``): an ``AtariVectorEnv`` in its same-step mode, whose
  ``info["final_obs"]`` holds the final frames; a built ``AtariVectorEnv`` in its next-step
  mode is converted with Gymnasium's partial reset, as any vector environment. Its v5
  settings are ALE's: sticky actions (0.25), 108,000 frames at most, the minimal action set,
  and ``AtariVectorEnv``'s standard preprocessing (84x84 grayscale, 4 frames stacked, frame
  skip 4 with max-pooling, up to 30 no-ops at reset, FIRE at reset, rewards clipped to
  their sign, so ``episode_return`` counts clipped rewards unless
  ``reward_clipping=False``).
- **envpool** (``"envpool/<Task>"``): next-step resets only. Where an episode ended, the
  environment is stepped once more at once, alone (envpool's ``step(actions, env_id)``):
  that call is envpool's reset, whose action it ignores, so the learner's next action goes
  to the new episode's first observation and no transition is spent.

Seeding: ALE takes each environment's seed at a whole reset, the
:func:`~rollax.host.episode_seeds` (modulo ``2**31``). envpool seeds environment ``i`` with
``seed + i`` from one seed, and only when a pool starts: a reset with a seed starts a new
pool, from the first of :func:`~rollax.host.episode_seeds`. Either way a run is
reproducible from its seed.
"""

from __future__ import annotations

import contextlib
import re
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np

from rollax import spaces as rspaces
from rollax.host._env import HostEnv, HostEnvError
from rollax.host._gymnasium import GymnasiumHostEnv, from_gymnasium_space

__all__ = [
    "ATARI_GAMES",
    "FRAMES",
    "MUJOCO_TASKS",
    "AleHostEnv",
    "EnvpoolHostEnv",
    "ale_game",
    "atari_ids",
    "frames",
    "frames_space",
]

ATARI_GAMES = ("Alien", "Amidar", "Asterix", "BeamRider", "Breakout", "Enduro", "Freeway",
               "MsPacman", "Pong", "Qbert", "Seaquest", "SpaceInvaders")  # fmt: skip
"""The Atari games the agents' presets name (the usual benchmark subset)."""


MUJOCO_TASKS = ("Ant", "HalfCheetah", "Hopper", "Walker2d")
"""Gymnasium's MuJoCo tasks (``"gymnasium/<Task>-v5"``) the off-policy presets name."""


def atari_ids(games: tuple[str, ...] = ATARI_GAMES) -> tuple[str, ...]:
    """Each game's ids on the host: ``"ale/<Game>-v5"`` and ``"envpool/<Game>-v5"``."""
    return tuple(f"{library}/{game}-v5" for game in games for library in ("ale", "envpool"))


FRAMES = "pixels/frames"
"""The observation entry of Atari's stacked frames, ``(84, 84, 4)`` uint8 by default."""

ALE_V5 = {
    "repeat_action_probability": 0.25,
    "max_num_frames_per_episode": 108_000,
    "full_action_space": False,
}
"""ALE's v5 settings, which ``AtariVectorEnv``'s own defaults differ from (no sticky
actions)."""


def ale_game(env_id: str) -> str:
    """ALE's game name of an id: ``"ale/SpaceInvaders-v5"`` -> ``"space_invaders"``.

    Raises:
        ValueError: an id that is not ``"ale/<Game>-v5"``.
    """
    match = re.fullmatch(r"ale/([A-Z][A-Za-z0-9]*)-v5", env_id)
    if match is None:
        raise ValueError(
            f"rollax.host.make({env_id!r}): ALE's ids are 'ale/<Game>-v5', e.g. 'ale/Pong-v5' "
            "or 'ale/SpaceInvaders-v5'."
        )
    return re.sub(r"(?<!^)(?=[A-Z])", "_", match.group(1)).lower()


def _is_frames(space: rspaces.Space) -> bool:
    """Whether a space is Atari's stacked frames, channels first: uint8 ``(C, H, W)``."""
    return isinstance(space, rspaces.Box) and len(space.shape) == 3 and space.dtype == np.uint8


def frames_space(space: rspaces.Space) -> rspaces.Space:
    """``{"pixels/frames": (H, W, C)}`` for channels-first frames; other spaces as they are."""
    if not _is_frames(space):
        return space
    c, h, w = space.shape
    return rspaces.Dict({FRAMES: rspaces.Box(0, 255, (h, w, c), np.uint8)})


def frames(obs: Any, space: rspaces.Space) -> Any:
    """A batch of channels-first frames ``(B, C, H, W)`` as ``{"pixels/frames": (B, H, W, C)}``.

    Other observations (``space`` not frames) are returned as they are.
    """
    if not _is_frames(space):
        return obs
    return {FRAMES: np.moveaxis(np.asarray(obs), 1, -1)}


class AleHostEnv(GymnasiumHostEnv):
    """ALE's ``AtariVectorEnv`` with rollax's semantics (see the module docstring).

    Args:
        env: The vector environment (same-step mode, or next-step converted).
        name: What messages call it.
    """

    def __init__(self, env: Any, name: str) -> None:
        super().__init__(env, name)
        self._frames = self.observation_space
        self.observation_space = frames_space(self.observation_space)

    @classmethod
    def make(cls, env_id: str, num_envs: int, **options: Any) -> AleHostEnv:
        """``num_envs`` games of ``"ale/<Game>-v5"`` in ALE's threads.

        ``options`` are ``AtariVectorEnv``'s (``num_threads``, ``episodic_life``,
        ``reward_clipping``, ``stack_num``...), over ALE's v5 settings.
        """
        from ale_py.vector_env import AtariVectorEnv

        game = ale_game(env_id)
        settings = {**ALE_V5, **options, "autoreset_mode": "SameStep"}
        try:
            env = AtariVectorEnv(game, num_envs, **settings)
        except TypeError as err:
            raise TypeError(f"rollax.host.make({env_id!r}): {err}.") from None
        return cls(env, env_id)

    def _reset(self, seeds: list[int]) -> Any:
        # Each environment's own seed, within the int32 that ALE takes.
        obs, _ = self.env.reset(seed=np.asarray(seeds, np.int64) % 2**31)
        return frames(obs, self._frames)

    def _step(self, actions: Any) -> tuple[Any, Any, Any, Any, Any]:
        obs, reward, terminated, truncated, final_obs = super()._step(actions)
        return (frames(obs, self._frames), reward, terminated, truncated,
                frames(final_obs, self._frames))  # fmt: skip


class EnvpoolHostEnv(HostEnv):
    """An envpool pool with rollax's semantics (see the module docstring).

    Args:
        task_id: envpool's task (``"Breakout-v5"``, ``"CartPole-v1"``, ``"HalfCheetah-v4"``).
        num_envs: Environments in the pool.
        options: ``envpool.make``'s options (``num_threads``, ``episodic_life``,
            ``reward_clip``...).
    """

    def __init__(self, task_id: str, num_envs: int, **options: Any) -> None:
        import envpool

        if task_id not in envpool.list_all_envs():
            import difflib

            close = difflib.get_close_matches(task_id, envpool.list_all_envs(), n=3)
            hint = f" Close: {', '.join(close)}." if close else ""
            raise ValueError(f"rollax.host.make: envpool has no task {task_id!r}.{hint}")
        for reserved in ("env_type", "num_envs", "batch_size", "seed"):
            if reserved in options:
                raise TypeError(
                    f"rollax.host.make('envpool/{task_id}'): {reserved} is rollax's to set "
                    "(num_envs is make's argument; seeds come from the run's seed)."
                )
        self.task_id, self.options = task_id, options
        self.pool = self._pool(num_envs, 0)
        with _float64_bounds_cast():
            self._frames = from_gymnasium_space(
                self.pool.observation_space, "observation", f"envpool/{task_id}"
            )
            action_space = from_gymnasium_space(
                self.pool.action_space, "action", f"envpool/{task_id}"
            )
        self._action_dtype = self.pool.action_space.dtype
        super().__init__(f"envpool/{task_id}", num_envs, frames_space(self._frames), action_space)

    def _pool(self, num_envs: int, seed: int) -> Any:
        import envpool

        try:
            with _float64_bounds_cast():
                return envpool.make(self.task_id, env_type="gymnasium", num_envs=num_envs,
                                    seed=seed, **self.options)  # fmt: skip
        except (TypeError, ValueError, KeyError) as err:
            raise TypeError(f"rollax.host.make('envpool/{self.task_id}'): {err}.") from None

    def _reset(self, seeds: list[int]) -> Any:
        # envpool takes its seed when the pool starts: a reset with a seed starts a new pool.
        self.pool.close()
        self.pool = self._pool(self.num_envs, int(seeds[0]) % (2**31 - self.num_envs))
        with _float64_bounds_cast():  # the new pool's spaces, built at its first reset
            obs, info = self.pool.reset()
        return frames(_by_env(obs, info), self._frames)

    def _step(self, actions: Any) -> tuple[Any, Any, Any, Any, Any]:
        actions = actions.astype(self._action_dtype, copy=False)
        obs, reward, terminated, truncated, info = self.pool.step(actions)
        order = np.argsort(info["env_id"])
        obs, reward = _rows(obs, order), np.asarray(reward)[order]
        terminated = np.asarray(terminated, bool)[order]
        truncated = np.asarray(truncated, bool)[order]
        final_obs = obs
        ended = np.flatnonzero(terminated | truncated)
        if len(ended):  # envpool's reset step, taken now: it ignores its action
            idle = np.zeros((len(ended), *actions.shape[1:]), actions.dtype)
            first, _, _, _, again = self.pool.step(idle, ended.astype(np.int32))
            if not np.array_equal(np.sort(again["env_id"]), ended):
                raise HostEnvError(
                    f"{self.name}, step at step {self._steps}: envpool answered the reset of "
                    f"environments {ended.tolist()} with {np.asarray(again['env_id']).tolist()}."
                )
            obs = _copy(obs)
            _set(obs, np.asarray(again["env_id"]), first)
        return (
            frames(obs, self._frames),
            reward,
            terminated,
            truncated,
            frames(final_obs, self._frames),
        )

    def _close(self) -> None:
        self.pool.close()


@contextlib.contextmanager
def _float64_bounds_cast() -> Iterator[None]:
    """Gymnasium's warning that a Box's float64 bounds are cast to float32, silenced.

    envpool's classic-control and MuJoCo spaces have float64 bounds; their float32 cast is
    what rollax's spaces keep anyway.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", ".*precision lowered by casting", UserWarning)
        yield


def _by_env(obs: Any, info: dict) -> Any:
    """A batch in the order of the environments' ids."""
    return _rows(obs, np.argsort(info["env_id"]))


def _rows(obs: Any, order: np.ndarray) -> Any:
    if isinstance(obs, dict):
        return {k: np.asarray(v)[order] for k, v in obs.items()}
    return np.asarray(obs)[order]


def _copy(obs: Any) -> Any:
    if isinstance(obs, dict):
        return {k: np.array(v, copy=True) for k, v in obs.items()}
    return np.array(obs, copy=True)


def _set(obs: Any, rows: np.ndarray, values: Any) -> None:
    if isinstance(obs, dict):
        for k in obs:
            obs[k][rows] = values[k]
    else:
        obs[rows] = values
