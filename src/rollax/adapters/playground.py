"""MuJoCo Playground environments inside rollax (extra ``rollax[playground]``).

``rollax.make("playground/<name>")`` runs a Playground task's own ``reset`` and ``step``
(its MJX physics) inside rollax's ``VecEnv``, with rollax's semantics where Playground's
training wrappers differ:

- **Every reset is fresh.** Playground's ``BraxAutoResetWrapper`` by default returns every
  ended episode to the state its environment slot was first reset to (google-deepmind/
  mujoco_playground#164, #179). Here each reset calls the task's ``reset`` with a key used
  nowhere else, through rollax's reset strategies, so each episode draws the task's own
  randomized initial state (the cart's position, the walker's joints...). Two tasks draw
  nothing: BallInCup and the Humanoid tasks start from one fixed state in Playground itself.
- **The time limit is rollax's** (``PlaygroundParams.max_episode_steps``, by default the
  task's ``episode_length``, 1,000 control steps for the DM Control Suite). It ends an episode
  with ``truncated``; ``terminated`` is the task's own ``done`` alone (a diverged simulation in
  the DM Control Suite, a fall for a robot).
- **``final_obs`` is the true last observation.** Playground's wrapper replaces it with the
  reset observation, so a truncated episode bootstraps from the next episode's first state
  (google-deepmind/mujoco_playground#305).

The physics backend is MJX in JAX (``impl="jax"``). MuJoCo Warp (``impl="warp"``,
Playground's own default) is refused with the reason: its state holds buffers that the whole
batch shares (its contact lists, of leading size 0 on a CPU), so no reset strategy can give
one environment a new start without touching the others'. Other entries of the
task's Playground config are options too (``ctrl_dt``, ``sim_dt``, a reward's ``config``...,
given as ``config_overrides={"reward_config.scales.x": 1.0}`` or by top-level name); they set
the compiled step and are fixed when the environment is built.

``render`` draws a state with MuJoCo's own renderer on the host (a ``jax.pure_callback``, so
it runs under ``jit`` and ``vmap`` like every rollax renderer, one picture at a time). On a
machine without a display MuJoCo needs ``MUJOCO_GL=egl`` (or ``osmesa``) set before it is
imported; rollax's command line sets ``egl`` itself when nothing is set and no display is.

The locomotion and manipulation tasks need MuJoCo Menagerie's robot models, which Playground
clones from GitHub at first use into its own package folder. rollax never does: pass
``menagerie_path=`` (or set ``MENAGERIE_ROOT``) to a Menagerie checkout, and Playground reads
its models from there for as long as the environment is built.
"""

from __future__ import annotations

import contextlib
import io
import os
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rollax._struct import pytree_dataclass
from rollax.adapters._mujoco_render import HostRenderer, camera_index, checked_render_size
from rollax.adapters._suite import SuiteEnv, strong, suite_code, unknown_id
from rollax.envs import EnvParams
from rollax.spaces import Box, Dict

__all__ = ["IMPLS", "PHYSICS", "PlaygroundEnv", "PlaygroundParams", "playground_ids"]

IMPLS = ("jax",)
"""The physics backends rollax runs Playground's tasks on (Playground's ``impl``; its
``"warp"`` is refused, see :class:`PlaygroundEnv`)."""

PHYSICS = "physics"
"""The key of ``state.info`` that holds an episode's drawn physics under ``randomization_fn``."""

_PHYSICS_STREAM = 0x70687973  # fold_in's data for an episode's physics key, apart from reset's

_MENAGERIE_ENV = "MENAGERIE_ROOT"  # the PyPI mujoco-menagerie package's name for a checkout


@pytree_dataclass
class PlaygroundParams(EnvParams):
    """A Playground task's params.

    Attributes:
        max_episode_steps: rollax's time limit in control steps (by default the task's
            ``episode_length``); in agent steps under an action repeat, whose default
            divides it (:class:`~rollax.envs.wrappers.ActionRepeat`).
        model: The MJX model's fields named by the environment's ``model_params`` option,
            by name (``{"body_mass": float32 (nbody,), "opt.timestep": float32 ()}``; ``None``
            without that option): values the physics reads, as data. A leading ``num_envs``
            axis gives each environment its own (domain randomization).
    """

    max_episode_steps: Any = np.int32(1000)
    model: Any = None


def _suites() -> tuple[Any, Any, Any]:
    """Playground's three suites: the DM Control Suite, locomotion and manipulation.

    Importing Playground imports Brax, which announces optional backends on stdout and the
    deprecations of its own dependencies (JAXopt): those are Playground's to fix, and are
    kept quiet here.
    """
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from mujoco_playground import dm_control_suite, locomotion, manipulation

    return dm_control_suite, locomotion, manipulation


def playground_ids() -> list[str]:
    """``playground/<name>`` for every Playground task (empty without Playground installed)."""
    try:
        suites = _suites()
    except ImportError:
        return []
    return ["playground/" + name for suite in suites for name in suite.ALL_ENVS]


@contextlib.contextmanager
def _menagerie(path: Path | None) -> Iterator[None]:
    """Playground reads Menagerie's models from ``path`` while an environment is built."""
    from mujoco_playground._src import mjx_env

    if path is None:
        yield
        return
    from etils import epath

    before = mjx_env.MENAGERIE_PATH
    mjx_env.MENAGERIE_PATH = epath.Path(path)  # read at call time by every robot's loader
    try:
        yield
    finally:
        mjx_env.MENAGERIE_PATH = before


def _menagerie_path(env_id: str, given: str | os.PathLike | None) -> Path | None:
    """Where a robot task's Menagerie models are; a ``ValueError`` when there are none."""
    from mujoco_playground._src import mjx_env

    if given is not None:
        path, source = Path(given), "menagerie_path"
    elif os.environ.get(_MENAGERIE_ENV):
        path, source = Path(os.environ[_MENAGERIE_ENV]), _MENAGERIE_ENV
    else:
        path, source = Path(mjx_env.MENAGERIE_PATH), None
    if path.is_dir() and any(path.iterdir()):
        return path if source else None
    where = f"{source}={str(path)!r} is not a Menagerie checkout" if source else "none found"
    raise ValueError(
        f"playground/{env_id} needs MuJoCo Menagerie's robot models ({where}). Playground "
        "would clone them from GitHub into its own package folder at first use; rollax does "
        "not. Clone https://github.com/google-deepmind/mujoco_menagerie at commit "
        f"{mjx_env.MENAGERIE_COMMIT_SHA} and pass menagerie_path=<that folder> (or set "
        f"{_MENAGERIE_ENV}). The DM Control Suite tasks need no download."
    )


def _overrides(env_id: str, config: Any, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``overrides`` as Playground's flattened keys; a ``ValueError`` naming unknown ones."""
    known = set(_flat_keys(config))
    unknown = sorted(key for key in overrides if key not in known)
    if unknown:
        raise ValueError(
            f"playground/{env_id} has no config entry {', '.join(map(repr, unknown))}; its "
            f"entries: {', '.join(sorted(known))}."
        )
    return dict(overrides)


def _flat_keys(config: Any, prefix: str = "") -> Iterator[str]:
    for key, value in config.items():
        yield prefix + key
        if hasattr(value, "items"):
            yield from _flat_keys(value, f"{prefix}{key}.")


class PlaygroundEnv(SuiteEnv):
    """A Playground task with rollax's semantics; its state is Playground's ``State``.

    Args:
        env_id: A Playground task, e.g. ``"CartpoleBalance"`` (:func:`playground_ids`).
        impl: The physics backend, one of :data:`IMPLS` (default ``"jax"``).
        menagerie_path: A MuJoCo Menagerie checkout, for the locomotion and manipulation
            tasks (default: ``$MENAGERIE_ROOT``, else Playground's own folder if it has one).
        config_overrides: Entries of the task's Playground config, by flattened name
            (``{"ctrl_dt": 0.02}``, ``{"reward_config.scales.tracking_lin_vel": 2.0}``).
        render_size: ``(height, width)`` of :meth:`render`'s pictures, in pixels (default
            ``(240, 320)``, Playground's own).
        render_camera: The camera :meth:`render` looks through: a name of the task's model
            (CartpoleBalance has ``"fixed"`` and ``"lookatcart"``), an index, or ``-1``, MuJoCo's
            free camera (the default, as in Playground).
        model_params: Float fields of the task's MJX model to hold in
            ``PlaygroundParams.model`` (``"body_mass"``, ``"geom_friction"``,
            ``"dof_damping"``, ``"actuator_gear"``, ``"opt.timestep"``...): changing them, or
            giving each environment its own, compiles nothing again. Quantities MuJoCo derives
            from them when it compiles a model (a body's subtree mass, the inverse weights)
            keep their first values, as under Playground's own domain randomization.
        randomization_fn: Domain randomization drawn anew for every episode: a function in
            Playground's form, ``(mjx_model, keys (N, 2)) -> (models, in_axes)`` (the model
            with ``N`` draws of the fields it randomizes, and ``0`` in ``in_axes`` where it
            did), or ``True`` for the task's own (Playground's robot tasks have one). Every
            reset draws its episode's physics from a key of its own, on the model with
            ``params.model`` applied, and the episode steps with it; ``state.info["physics"]``
            holds it by field name. (Playground's wrapper draws once per environment, for
            the whole of training.)
        **config: Top-level entries of the config by keyword, as ``config_overrides``.
    """

    prefix = "playground/"
    # A fresh start runs the task's reset, a physics forward pass of hundreds of fused
    # operations. So on an accelerator computing one for every environment on every step
    # (``every_step``, what Playground's ``full_reset=True`` does) costs far more than what
    # ``pool`` adds to a step (docs/environments.md, "Reset strategies", has the figures).
    costly_reset = True

    def __init__(
        self,
        env_id: str,
        impl: str = "jax",
        menagerie_path: str | os.PathLike | None = None,
        config_overrides: Mapping[str, Any] | None = None,
        render_size: tuple[int, int] = (240, 320),
        render_camera: str | int = -1,
        model_params: Sequence[str] = (),
        randomization_fn: Callable[[Any, jax.Array], tuple[Any, Any]] | bool | None = None,
        **config: Any,
    ) -> None:
        dm_control_suite, locomotion, manipulation = _suites()
        suites = (dm_control_suite, locomotion, manipulation)
        names = [name for suite in suites for name in suite.ALL_ENVS]
        if env_id not in names:
            raise unknown_id("Playground", self.prefix, env_id, names)
        from mujoco_playground import registry

        robot = env_id not in dm_control_suite.ALL_ENVS
        path = _menagerie_path(env_id, menagerie_path) if robot else None
        defaults = registry.get_default_config(env_id)
        overrides = _overrides(env_id, defaults, {**(config_overrides or {}), **config})
        impl = overrides.pop("impl", impl)  # the config entry, given as an override, alike
        if impl == "warp":
            raise ValueError(
                "impl='warp': MuJoCo Warp's state holds buffers the whole batch shares (its "
                "contact lists), which rollax's resets cannot give each environment its own "
                "start in; use impl='jax' (MJX in JAX)."
            )
        if impl not in IMPLS:
            raise ValueError(f"impl={impl!r}: Playground's backends are jax, warp.")
        if "impl" in defaults:  # one task builds its model without (MJX's default, jax)
            overrides = {"impl": impl, **overrides}
        self.env_id = env_id
        self.impl = impl
        with _menagerie(path), suite_code():
            self._env = registry.load(env_id, config=defaults, config_overrides=overrides)
            # The spaces from one traced reset, as Playground's observation_size does.
            first = jax.eval_shape(self._env.reset, jax.random.PRNGKey(0))
        self._episode_length = int(defaults.get("episode_length", 1000))  # overrides applied
        low, high = self._env.mj_model.actuator_ctrlrange.astype(np.float32).T
        limited = self._env.mj_model.actuator_ctrllimited.astype(bool)
        self._action_space = Box(
            np.where(limited, low, -np.inf), np.where(limited, high, np.inf), low.shape
        )
        self._observation_space = jax.tree.map(_unbounded, first.obs)
        if isinstance(first.obs, Mapping):
            self._observation_space = Dict(dict(self._observation_space))
        self._model_params = _model_params(env_id, self._env.mjx_model, model_params)
        self._randomize, self._randomized = _randomizer(
            env_id, self._env.mjx_model, randomization_fn
        )
        self._render_size = checked_render_size(render_size)
        buffer = self._env.mj_model.vis.global_
        if self._render_size[0] > buffer.offheight or self._render_size[1] > buffer.offwidth:
            raise ValueError(
                f"render_size={render_size!r}: playground/{env_id}'s model draws offscreen at "
                f"most {buffer.offheight} x {buffer.offwidth} pixels (its visual/global "
                "offheight and offwidth)."
            )
        self._render_camera = camera_index(env_id, self._env.mj_model, render_camera)
        self._renderer = HostRenderer(self._env.mj_model, self._render_size, self._render_camera)

    @property
    def default_params(self) -> PlaygroundParams:
        return PlaygroundParams(
            max_episode_steps=np.int32(self._episode_length),
            model=dict(self._model_params) if self._model_params else None,
        )

    @contextlib.contextmanager
    def _running_on(self, model: Any) -> Iterator[None]:
        """Playground's code runs on ``model`` (while it is traced)."""
        first = self._env._mjx_model
        # The attribute Playground's own domain randomization replaces (Brax's wrapper).
        self._env._mjx_model = model
        try:
            with suite_code():
                yield
        finally:
            self._env._mjx_model = first

    def _model(self, params: PlaygroundParams, physics: Mapping[str, Any] | None) -> Any:
        """The MJX model with ``params.model`` and then an episode's ``physics`` applied."""
        model = self._env._mjx_model
        for values in (params.model, physics):
            if values:
                model = model.tree_replace(dict(values))
        return model

    def reset_env(self, key: jax.Array, params: PlaygroundParams) -> Any:
        # Playground's tasks split a raw uint32 key (jax.random.PRNGKey's kind).
        raw = _raw_key(key)
        model, physics = self._model(params, None), None
        if self._randomize is not None:
            # The episode's physics from a key of its own; the task's reset keeps `raw`.
            physics_key = _raw_key(jax.random.fold_in(key, _PHYSICS_STREAM))
            with suite_code():
                draws, _ = self._randomize(model, physics_key[None])
            physics = {name: _field(draws, name)[0] for name in self._randomized}
            model = model.tree_replace(physics)
        with self._running_on(model):
            state = strong(self._env.reset(raw))
        if physics is not None:
            state = state.replace(info={**state.info, PHYSICS: physics})
        return state

    def step_env(self, state: Any, action: jax.Array, params: PlaygroundParams) -> tuple:
        with self._running_on(self._model(params, state.info.get(PHYSICS))):
            state = strong(self._env.step(state, action))
        return state, jnp.asarray(state.reward, jnp.float32), state.done > 0.5

    def observe(self, state: Any, params: PlaygroundParams) -> Any:
        return jax.tree.map(lambda x: jnp.asarray(x, jnp.float32), state.obs)

    def render(self, state: Any, params: PlaygroundParams) -> jax.Array:
        """A picture of ``state`` from MuJoCo's renderer: uint8 ``(H, W, 3)`` (``render_size``).

        The pose (``qpos``, the mocap bodies, the applied forces) goes to the host, where MuJoCo
        computes the scene and draws it, as Playground's ``render`` does; under ``vmap`` the
        pictures are drawn one after another. The scene is the task's model as built:
        ``params.model`` and a randomized episode's physics do not change it (a randomized
        geometry is drawn at its first size).
        """
        data = state.data
        pose = (data.qpos, data.qvel, data.mocap_pos, data.mocap_quat, data.xfrc_applied)
        picture = jax.ShapeDtypeStruct((*self._render_size, 3), jnp.uint8)
        return jax.pure_callback(self._renderer, picture, *pose, vmap_method="sequential")


def _raw_key(key: jax.Array) -> jax.Array:
    """A key as raw uint32 data: Playground's tasks split ``jax.random.PRNGKey``'s kind."""
    return jax.random.key_data(key) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else key


def _field(model: Any, name: str) -> Any:
    """``model``'s field by dotted name (``"opt.timestep"``); ``None`` when it has none."""
    for part in name.split("."):
        model = getattr(model, part, None)
    return model


def _randomizer(env_id: str, model: Any, fn: Any) -> tuple[Any, tuple[str, ...]]:
    """``randomization_fn`` and the names of the fields it draws (``(None, ())`` for none)."""
    if fn is None or fn is False:
        return None, ()
    if fn is True:
        from mujoco_playground import registry

        with contextlib.redirect_stdout(io.StringIO()):  # Playground prints when it has none
            fn = registry.get_domain_randomizer(env_id)
        if fn is None:
            raise ValueError(
                f"randomization_fn=True: Playground has no domain randomizer for "
                f"playground/{env_id} (its robot tasks have); pass your own, "
                "(mjx_model, keys) -> (models, in_axes)."
            )
    if not callable(fn):
        raise ValueError(
            f"randomization_fn={fn!r}: give a function (mjx_model, keys) -> (models, in_axes), "
            "True for the task's own, or None."
        )
    try:
        with suite_code():
            _, in_axes = fn(model, jax.random.split(jax.random.PRNGKey(0), 1))
        paths = jax.tree_util.tree_leaves_with_path(in_axes)
        names = tuple(".".join(getattr(k, "name", str(k)) for k in path) for path, _ in paths)
    except Exception as e:
        raise ValueError(
            f"randomization_fn: calling it as Playground does, with the model and keys of shape "
            f"(1, 2), failed ({type(e).__name__}: {e})."
        ) from e
    if not names:
        raise ValueError(
            f"randomization_fn={fn!r}: the in_axes it returns batch no field of the model (no "
            "0 among them), so it randomizes nothing."
        )
    return fn, names


def _model_params(env_id: str, model: Any, names: Sequence[str]) -> dict[str, np.ndarray]:
    """The named float fields of an MJX model, by name; a ``ValueError`` for any other."""
    if isinstance(names, str):
        raise ValueError(f"model_params={names!r}: give a sequence of names, e.g. ('body_mass',).")
    # The model's array leaves: its other fields are static to MJX (they shape the program).
    leaves = {
        ".".join(getattr(k, "name", str(k)) for k in path): leaf
        for path, leaf in jax.tree_util.tree_leaves_with_path(model)
    }
    floats = sorted(
        n for n, v in leaves.items() if jnp.issubdtype(np.asarray(v).dtype, jnp.floating)
    )
    fields = {}
    for name in names:
        if str(name) not in floats:
            what = "not a float array" if str(name) in leaves else "not a data field"
            raise ValueError(
                f"model_params: {name!r} is {what} of playground/{env_id}'s MJX model (integer "
                "fields index or size the model, and MJX holds some float fields as constants "
                f"of the compiled program). Its float data fields: {', '.join(floats)}."
            )
        fields[str(name)] = np.asarray(leaves[str(name)])
    return fields


def _unbounded(leaf: jax.ShapeDtypeStruct) -> Box:
    high = np.full(leaf.shape, np.inf, np.float32)
    return Box(-high, high, leaf.shape)
