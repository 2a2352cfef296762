"""Videos of a policy: one episode, the rendered scene beside what the agent saw."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rollax._files import publish, temporary_path
from rollax.envs import VecEnv
from rollax.host import MemberEnvs, host_seed
from rollax.runs._run_dir import RunDirectory
from rollax.spaces import is_image_key
from rollax.training import Agent, params_for_batch
from rollax.types import PRNGKey

__all__ = ["check_video_path", "record_episode", "write_video"]


def check_video_path(path: str | Path, directory: str | Path | None = None) -> Path:
    """Check a video path (and, given ``directory``, that the run's environment renders).

    Raises:
        ValueError: a suffix other than ``.gif``/``.mp4``, or an environment without render.
    """
    path = Path(path)
    if path.suffix.lower() not in (".gif", ".mp4"):
        raise ValueError(f"--video must end in .gif or .mp4, got {str(path)!r}.")
    run = RunDirectory(Path(directory)) if directory is not None else None
    if run is not None and run.holds_run():
        from rollax.envs import make
        from rollax.host import is_host_env

        env_id = run.read_config()["env"]
        if is_host_env(env_id):  # whether it renders shows when it is made to record
            return path
        env = make(env_id)
        if not env.can_render and not _image_keys(env.observation_space):
            raise ValueError(
                f"--video: {env_id} cannot render (it has no render method) and observes no "
                f"images; the classic-control environments, the mazes, PixelCartPole-v1, "
                f"gymnax's MinAtar games, Craftax and Playground's tasks can be recorded."
            )
    return path


def _image_keys(space: Any) -> list[str]:
    """The ``"pixels/..."`` keys of a dict observation space (none for other spaces)."""
    from rollax.spaces import Dict

    if not isinstance(space, Dict):
        return []
    return sorted(k for k in space.spaces if is_image_key(k))


def write_video(
    agent: Agent, state: Any, key: PRNGKey, path: str | Path, fps: int = 30
) -> tuple[Path, float]:
    """Record one episode of seed 0's deterministic policy to ``path``.

    The format follows the extension: ``.gif``, or ``.mp4`` (needs ``imageio-ffmpeg``).
    The file appears complete or not at all (written under a temporary name).

    Returns:
        ``(path, episode_return)``.

    Raises:
        ValueError: an unsupported extension, or an ``.mp4`` without ``imageio-ffmpeg``.
        TypeError: an environment that neither renders nor observes images.
    """
    import imageio.v3 as iio

    path = check_video_path(path)
    frames, episode_return = record_episode(agent, state, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_path(path)
    try:
        if path.suffix.lower() == ".gif":
            iio.imwrite(tmp, frames, duration=1000 / fps, loop=0)
        else:
            try:
                iio.imwrite(tmp, frames, fps=fps, codec="libx264", macro_block_size=1)
            except Exception as e:  # imageio raises ImportError or its own error without ffmpeg
                raise ValueError(
                    f"Writing {path.name} needs imageio-ffmpeg (pip install 'rollax[video]'); "
                    f"a .gif needs nothing more ({type(e).__name__}: {e})."
                ) from e
        publish(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path, episode_return


def record_episode(agent: Agent, state: Any, key: PRNGKey) -> tuple[np.ndarray, float]:
    """Frames uint8 ``(T + 1, H, W, 3)`` of one episode of seed 0, and its return.

    Each seed plays one episode with its deterministic policy, with the state's params (seed
    0's first training environment's, for per-environment params) until the state's episode
    limit; seed 0's is drawn.
    """
    if isinstance(agent.env, MemberEnvs):
        return _record_host_episode(agent, state, key)
    seeds = agent.num_seeds
    env = VecEnv(agent.env.env, seeds, "disabled", "on_done", agent.env.env_id)
    if not env.can_render and not _image_keys(env.observation_space):
        env.render(None)  # raises the TypeError that explains it
    params = params_for_batch(
        state.env_params, env.default_params, agent.num_train_envs, seeds, per_seed=1
    )
    horizon = int(np.max(jax.device_get(params.max_episode_steps)))
    policy = agent.policy

    def frame_of(env_state: Any, obs: Any) -> jax.Array:
        """The scene with the agent's view beside it, or the view alone without a renderer."""
        scene = env.render(env_state, params)[0] if env.can_render else None
        return _with_agent_view(scene, obs)

    @jax.jit
    def episode(state: Any, key: PRNGKey) -> tuple:
        k_reset, k_act = jax.random.split(key)
        env_state, ts = env.reset(k_reset, params)
        first_frame = frame_of(env_state, ts.obs)

        def step(carry: tuple, t: jax.Array) -> tuple:
            env_state, obs, policy_carry, done, total = carry
            first = jnp.broadcast_to(t == 0, (seeds, 1))
            obs = jax.tree.map(lambda x: x[:, None], obs)
            action, policy_carry = policy.act(
                state, obs, policy_carry, first, jax.random.fold_in(k_act, t), True
            )
            env_state, ts = env.step(env_state, action[:, 0].astype(env.action_space.dtype), params)
            total = total + jnp.where(done, 0.0, ts.reward)
            frame = frame_of(env_state, ts.obs)
            return (env_state, ts.obs, policy_carry, done | ts.done, total), (frame, done[0])

        carry = (
            env_state,
            ts.obs,
            policy.init_carry(state, 1),
            jnp.zeros(seeds, jnp.bool_),
            jnp.zeros(seeds, jnp.float32),
        )
        (*_, total), (frames, was_done) = jax.lax.scan(step, carry, jnp.arange(horizon))
        return first_frame, frames, was_done, total[0]

    first, frames, was_done, total = jax.device_get(episode(state, key))
    length = int(np.argmax(was_done)) if was_done.any() else horizon
    return np.concatenate([first[None], frames[:length]]), float(total)


MAX_HOST_VIDEO_STEPS = 100_000
"""Steps after which a video of a host environment whose episode has not ended stops."""


def _record_host_episode(agent: Agent, state: Any, key: PRNGKey) -> tuple[np.ndarray, float]:
    """:func:`record_episode` on host environments: frames from the environment's ``render``.

    Every seed plays one episode in a new environment made with ``render_mode="rgb_array"``;
    seed 0's frames are kept, up to the step that ends its episode (after it, the
    environment shows the next episode).
    """
    envs, seeds = agent.env, agent.num_seeds
    if envs.remake is None:
        raise ValueError(
            f"--video: {envs.env_id} was given as a built vector environment, which cannot be "
            "made again to record; give it by id, import path or function."
        )
    try:
        env = envs.remake(seeds, render_mode="rgb_array")
    except TypeError as err:
        raise ValueError(
            f"--video: {envs.env_id} cannot be made with render_mode='rgb_array' ({err}); give "
            "its constructor a render_mode argument, as Gymnasium's environments have."
        ) from None
    act = jax.jit(agent.policy.act, static_argnums=5)
    k_reset, k_act = jax.random.split(key)
    with env:
        obs = env.reset(host_seed(k_reset))
        carry = agent.policy.init_carry(state, 1)
        first = jnp.ones((seeds, 1), jnp.bool_)
        frames, total = [_host_frame(env)], 0.0
        for t in range(MAX_HOST_VIDEO_STEPS):
            rows = jax.tree.map(lambda x: x[:, None], obs)
            action, carry = act(state, rows, carry, first, jax.random.fold_in(k_act, t), True)
            ts = env.step(np.asarray(action).reshape(seeds, *env.action_space.shape))
            total += float(ts.reward[0])
            if ts.terminated[0] or ts.truncated[0]:
                return np.stack(frames), total
            frames.append(_host_frame(env))
            obs, first = ts.obs, jnp.asarray((ts.terminated | ts.truncated)[:, None])
    return np.stack(frames), total


def _host_frame(env: Any) -> np.ndarray:
    """The first environment's frame, uint8 ``(H, W, 3)``."""
    frames = env.render()
    frame = frames[0] if isinstance(frames, tuple | list) else frames
    if frame is None:
        raise ValueError(f"--video: {env.name} renders nothing (render returned None).")
    return np.asarray(frame, np.uint8)[..., :3]


def _with_agent_view(scene: jax.Array | None, obs: Any) -> jax.Array:
    """The rendered scene, and to its right what the agent saw (each camera's newest frame).

    For dict observations with ``"pixels/..."`` images (first environment of the batch),
    each image (:func:`_as_rgb`) is scaled up by a whole factor to the scene's height (to at
    least 96 pixels without a scene) and placed beside it; other observations add nothing.
    """
    keys = sorted(k for k in obs if is_image_key(k)) if isinstance(obs, dict) else []
    images = [_as_rgb(obs[key][0]) for key in keys]
    if scene is None:
        factors = [-(-96 // image.shape[0]) for image in images]
        height = max(image.shape[0] * f for image, f in zip(images, factors, strict=True))
    else:
        height = scene.shape[0]
        factors = [max(1, height // image.shape[0]) for image in images]
    panels = [] if scene is None else [scene]
    for image, f in zip(images, factors, strict=True):
        image = jnp.repeat(jnp.repeat(image, f, axis=0), f, axis=1)[:height]
        image = jnp.pad(image, ((0, height - image.shape[0]), (2, 0), (0, 0)), constant_values=255)
        panels.append(image)
    return jnp.concatenate(panels, axis=1)


_BOARD_COLORS = np.array(
    [[230, 25, 75], [60, 180, 75], [255, 225, 25], [0, 130, 200], [245, 130, 48],
     [145, 30, 180], [70, 240, 240], [240, 50, 230], [210, 245, 60], [128, 128, 128]],
    np.uint8,
)  # fmt: skip
"""Colours of the channels of a board-like image (MinAtar's), channel by channel."""


def _as_rgb(image: jax.Array) -> jax.Array:
    """uint8 ``(H, W, 3)`` of one observed image.

    Images whose channels come in threes (RGB frames, stacked or not) show their newest
    frame, the last three channels. Other images (MinAtar's boards: one channel per kind of
    object) are painted: each pixel takes the colour of its highest lit channel, black where
    none is lit.
    """
    channels = image.shape[-1]
    if channels % 3 == 0:
        return image[..., -3:].astype(jnp.uint8)
    colors = jnp.asarray(_BOARD_COLORS[np.arange(channels) % len(_BOARD_COLORS)])
    lit = image > 0
    top = channels - 1 - jnp.argmax(lit[..., ::-1], axis=-1)
    return jnp.where(lit.any(-1, keepdims=True), colors[top], jnp.zeros((), jnp.uint8))
