"""MuJoCo's renderer behind a ``jax.pure_callback``: pictures of MJX states on the host.

Playground's tasks draw through it (``PlaygroundEnv.render``). An OpenGL context is current in
one thread at a time, and JAX runs a callback on any of its threads, so each renderer lives in
a daemon thread of its own (:class:`HostRenderer`).
"""

from __future__ import annotations

import concurrent.futures
import os
import queue
import threading
import weakref
from typing import Any

import numpy as np

__all__ = ["HostRenderer", "camera_index", "checked_render_size"]


class HostRenderer:
    """MuJoCo's renderer for one model, in a host thread of its own.

    An OpenGL context is current in one thread at a time, and JAX runs a callback on any of
    its threads: so the renderer is made (at the first picture), used and closed in one daemon
    thread, this object's. It closes there when nothing holds this object any more (the
    environment and the compiled programs that draw with it), which is mostly at the
    interpreter's exit; a picture asked for after that is a ``RuntimeError``.
    """

    def __init__(self, model: Any, size: tuple[int, int], camera: int) -> None:
        self._drawing = {"model": model, "size": size, "camera": camera, "renderer": None}
        self._jobs: queue.SimpleQueue | None = None  # the thread starts at the first picture
        self._starting = threading.Lock()

    def __call__(self, *pose: np.ndarray) -> np.ndarray:
        """uint8 ``(H, W, 3)`` of ``qpos, qvel, mocap_pos, mocap_quat, xfrc_applied``."""
        with self._starting:
            if self._drawing.get("closed"):
                raise RuntimeError("MuJoCo's renderer for this environment is closed.")
            if self._jobs is None:
                self._jobs = queue.SimpleQueue()
                threading.Thread(
                    target=_serve,
                    args=(self._jobs, self._drawing),
                    name="rollax-mujoco-render",
                    daemon=True,
                ).start()
                weakref.finalize(self, _run, self._jobs, _close, self._drawing)
        return _run(self._jobs, _draw, self._drawing, *pose)


def _serve(jobs: queue.SimpleQueue, drawing: dict) -> None:
    """The render thread: run each job, hand back its result or error; stop after closing."""
    while True:
        fn, args, done = jobs.get()
        try:
            done.set_result(fn(*args))
        except BaseException as e:  # handed to the caller, who raises it
            done.set_exception(e)
        if fn is _close:
            return


def _run(jobs: queue.SimpleQueue, fn: Any, *args: Any) -> Any:
    done: concurrent.futures.Future = concurrent.futures.Future()
    jobs.put((fn, args, done))
    return done.result()


def _draw(drawing: dict, qpos, qvel, mocap_pos, mocap_quat, xfrc_applied) -> np.ndarray:
    import mujoco

    model = drawing["model"]
    if drawing["renderer"] is None:
        drawing["renderer"] = _renderer(model, *drawing["size"])
        drawing["data"] = mujoco.MjData(model)
    data, renderer = drawing["data"], drawing["renderer"]
    data.qpos, data.qvel = qpos, qvel
    data.mocap_pos, data.mocap_quat, data.xfrc_applied = mocap_pos, mocap_quat, xfrc_applied
    mujoco.mj_forward(model, data)
    renderer.update_scene(data, camera=drawing["camera"])
    return np.asarray(renderer.render(), np.uint8)


def _close(drawing: dict) -> None:
    drawing["closed"] = True
    renderer, drawing["renderer"] = drawing["renderer"], None
    if renderer is not None:
        renderer.close()


def checked_render_size(size: Any) -> tuple[int, int]:
    """``render_size`` as two positive ints; a ``ValueError`` naming what was given."""
    try:
        height, width = (int(v) for v in size)
        ok = (
            height > 0
            and width > 0
            and all(float(v) == int(v) and not isinstance(v, bool) for v in size)
        )
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError(f"render_size={size!r}: give (height, width), two positive ints.")
    return height, width


def camera_index(env_id: str, model: Any, camera: Any) -> int:
    """``render_camera`` as MuJoCo's camera index (-1: the free camera)."""
    import mujoco

    names = [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_CAMERA, i) for i in range(model.ncam)]
    if isinstance(camera, str) and camera in names:
        return names.index(camera)
    if isinstance(camera, (int, np.integer)) and not isinstance(camera, bool):
        if -1 <= camera < model.ncam:
            return int(camera)
    cameras = f"{', '.join(map(repr, names))} (or their indices 0 to {model.ncam - 1})"
    raise ValueError(
        f"render_camera={camera!r}: playground/{env_id}'s cameras are "
        f"{cameras if names else 'none'}, or -1 for MuJoCo's free camera."
    )


def _renderer(model: Any, height: int, width: int) -> Any:
    """MuJoCo's renderer, or a ``RuntimeError`` that says how to give it an OpenGL context."""
    import mujoco

    try:
        return mujoco.Renderer(model, height=height, width=width)
    except Exception as e:  # MuJoCo raises its own FatalError, or AttributeError, without GL
        gl = os.environ.get("MUJOCO_GL")
        raise RuntimeError(
            f"MuJoCo cannot render here (MUJOCO_GL={gl!r}; {type(e).__name__}: {e}). On a "
            "machine without a display, set MUJOCO_GL=egl (or osmesa) before mujoco is "
            "imported; rollax's command line does so itself. The picture must also fit MuJoCo's "
            "offscreen buffer (the model's visual/global offwidth and offheight)."
        ) from e
