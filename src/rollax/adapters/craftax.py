"""Craftax inside rollax (extra ``rollax[craftax]``).

``rollax.make("craftax/<variant>")``, one of :data:`VARIANTS`, runs Craftax's own world
generation and step with rollax's semantics:

- **Every reset is a new world.** A reset generates a world from a key used nowhere else,
  through rollax's reset strategies (on the CPU the ``pool`` draws worlds in batched refills;
  Craftax's own autoreset generates a world for every environment on every step).
- **The time limit is rollax's.** Craftax folds its ``max_timesteps`` into ``done``; here that
  limit is ``CraftaxParams.max_episode_steps`` and ends an episode with ``truncated``,
  while ``terminated`` is Craftax's natural end alone (death, lava, or in Craftax the defeated
  boss). ``final_obs`` is the true last observation.
- **Params are data.** Craftax's ``EnvParams`` (day length, mob health, spawn chances...)
  live in ``CraftaxParams.inner``; a changed value does not recompile.

Observations: the symbolic variants observe Craftax's float32 vector; the pixel variants
the agent's view as ``{"pixels/view": uint8 (H, W, 3)}`` (Craftax's float image in
``[0, 1]``, times 255 and rounded), which rollax's vision network, frame stacking and pixel
augmentation take as they take any camera. :meth:`CraftaxEnv.render` draws the view at 16
pixels a block for videos.
"""

from __future__ import annotations

from contextlib import ExitStack, suppress
from types import ModuleType
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rollax._struct import pytree_dataclass
from rollax.adapters._suite import SuiteEnv, strong, suite_code, unknown_id
from rollax.envs import EnvParams
from rollax.spaces import Box, Dict, Discrete, Space

__all__ = ["VARIANTS", "CraftaxEnv", "CraftaxParams", "CraftaxState", "craftax_ids"]

PREFIX = "craftax/"

VARIANTS: dict[str, tuple[bool, bool]] = {
    "Craftax-Classic-Symbolic-v1": (True, False),
    "Craftax-Classic-Pixels-v1": (True, True),
    "Craftax-Symbolic-v1": (False, False),
    "Craftax-Pixels-v1": (False, True),
}
"""Craftax's variants: ``(classic, pixels)`` by name."""

IMAGE_KEY = "pixels/view"
"""The observation key of the pixel variants' image."""

RENDER_BLOCK_PIXELS = 16
"""Pixels per block side in :meth:`CraftaxEnv.render` (Craftax's ``BLOCK_PIXEL_SIZE_IMG``)."""

_NO_LIMIT = np.int32(np.iinfo(np.int32).max)

RESET_CHUNK_CPU = 16
"""Worlds generated per chunk of a batched reset on the CPU.

Craftax's world generation (its Perlin noise) scales worse than linearly when XLA:CPU
runs it for many environments at once, and small chunks avoid that (the Benchmarks page,
"Fresh worlds", has the figures).
"""


@pytree_dataclass
class CraftaxParams(EnvParams):
    """Parameters of a Craftax environment.

    Attributes:
        max_episode_steps: rollax's time limit; Craftax's own ``max_timesteps`` by default
            (10,000 steps in Craftax-Classic, 100,000 in Craftax); int32.
        inner: Craftax's ``EnvParams`` (``inner.replace(day_length=...)`` changes one). Its
            ``max_timesteps`` is not read: the time limit is ``max_episode_steps``.
    """

    max_episode_steps: Any = np.int32(10_000)
    inner: Any = None


@pytree_dataclass
class CraftaxState:
    """A Craftax environment's state.

    Attributes:
        inner: Craftax's ``EnvState`` (its map, inventory, mobs, ``achievements``...).
        key: The key its stochastic transitions use (split every step).
    """

    inner: Any
    key: jax.Array


class CraftaxEnv(SuiteEnv):
    """A Craftax variant with rollax's semantics.

    Args:
        env_id: One of :data:`VARIANTS`, e.g. ``"Craftax-Classic-Symbolic-v1"``.
    """

    prefix = PREFIX

    costly_reset = True  # a world generation costs several hundred steps

    def __init__(self, env_id: str) -> None:
        if env_id not in VARIANTS:
            raise unknown_id("Craftax", PREFIX, env_id, VARIANTS)
        from craftax.craftax_env import make_craftax_env_from_name

        self.env_id = env_id
        self.classic, self.pixels = VARIANTS[env_id]
        self._env = make_craftax_env_from_name(env_id, auto_reset=False)
        if self.classic:
            from craftax.craftax_classic import constants, renderer
        else:
            from craftax.craftax import constants, renderer
        _load_textures(constants)
        self._view = renderer.make_craftax_pixel_renderer(constants.BLOCK_PIXEL_SIZE_AGENT)
        self._picture = renderer.make_craftax_pixel_renderer(RENDER_BLOCK_PIXELS)
        inner = self._env.default_params
        space = self._env.observation_space(inner)
        shape = tuple(int(d) for d in space.shape)
        if self.pixels:
            self._observation_space: Space = Dict({IMAGE_KEY: Box(0, 255, shape, np.uint8)})
        else:
            self._observation_space = Box(0.0, 1.0, shape)
        self._action_space = Discrete(int(self._env.num_actions))

    @property
    def reset_chunk(self) -> int | None:
        """Worlds per chunk of a batched reset: :data:`RESET_CHUNK_CPU` on the CPU."""
        return RESET_CHUNK_CPU if jax.default_backend() == "cpu" else None

    @property
    def default_params(self) -> CraftaxParams:
        inner = self._env.default_params
        return CraftaxParams(max_episode_steps=np.int32(inner.max_timesteps), inner=strong(inner))

    def reset_env(self, key: jax.Array, params: CraftaxParams) -> CraftaxState:
        k_world, k_steps = jax.random.split(key)
        with suite_code():
            _, inner = self._env.reset_env(k_world, self._inner(params))
        return CraftaxState(strong(inner), k_steps)

    def step_env(
        self, state: CraftaxState, action: jax.Array, params: CraftaxParams
    ) -> tuple[CraftaxState, jax.Array, jax.Array]:
        key, k_step = jax.random.split(state.key)
        with suite_code():
            _, inner, reward, done, _ = self._env.step_env(
                k_step, state.inner, action, self._inner(params)
            )
        # With the time limit lifted, Craftax's done is its natural end alone.
        return (
            CraftaxState(strong(inner), key),
            jnp.asarray(reward, jnp.float32),
            jnp.asarray(done, jnp.bool_),
        )

    def observe(self, state: CraftaxState, params: CraftaxParams) -> Any:
        with suite_code():
            if self.pixels:
                view = self._view(state.inner)
                return {IMAGE_KEY: jnp.round(jnp.clip(view, 0, 255)).astype(jnp.uint8)}
            return jnp.asarray(self._env.get_obs(state.inner), jnp.float32)

    def render(self, state: CraftaxState, params: CraftaxParams) -> jax.Array:
        """The agent's view at :data:`RENDER_BLOCK_PIXELS` pixels a block: uint8 ``(H, W, 3)``."""
        with suite_code():
            picture = self._picture(state.inner)
        return jnp.round(jnp.clip(picture, 0, 255)).astype(jnp.uint8)

    @staticmethod
    def _inner(params: CraftaxParams) -> Any:
        """Craftax's params with its own time limit lifted (rollax's applies instead)."""
        return params.inner.replace(max_timesteps=_NO_LIMIT)


def _load_textures(constants: ModuleType) -> None:
    """Load Craftax's block textures once per process, safe against other processes.

    At its first use Craftax draws the textures and writes them to a cache file beside its
    package, which a later process reads back. The write is not atomic: a second process
    starting meanwhile (another worker, another process of a multi-process run) finds a
    half-written file and fails with ``EOFError``. So every load holds an exclusive lock on a
    file beside the cache (``filelock``): a process that waited for it reads a whole file. The
    lock is taken even when the cache exists, since the file appears as soon as its writer
    starts. Where the lock cannot be made (a folder that cannot be written, where Craftax
    cannot write its cache either) the textures load as they do without rollax.
    """
    from filelock import FileLock

    with ExitStack() as held:
        with suppress(OSError):
            held.enter_context(FileLock(constants.TEXTURE_CACHE_FILE + ".lock"))
        constants.load_all_textures()  # cached by Craftax for the rest of the process


def craftax_ids() -> list[str]:
    """``craftax/<variant>`` for every variant (empty without Craftax installed)."""
    try:
        import craftax  # noqa: F401
    except ImportError:
        return []
    return [PREFIX + name for name in VARIANTS]
