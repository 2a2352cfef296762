"""Replay buffers sized in transitions, fed by many environments, aware of episodes.

* :class:`TransitionBuffer`: single transitions; with :class:`Transition` items,
  ``next_obs`` is the true successor (``final_obs`` at an episode end).
* :class:`SequenceBuffer`: sequences of ``sequence_length`` steps with a ``period``; they
  never cross the write head, and may cross episodes, stay within one, or come masked.
* Both can be ``prioritized`` (sum tree, ``update_priorities``).
* :class:`EpisodeBuffer`: whole episodes padded to ``max_length``, with their lengths.

Every buffer is a frozen config whose methods ``init``, ``add``, ``sample``,
``can_sample`` and ``size`` are pure functions of a state pytree; ``jit`` ``add`` with
``donate_argnums=0`` to update the storage in place. Bad configurations raise a
``ValueError`` or ``TypeError`` when the buffer is built, naming what would work.
"""

from rollax.buffers._common import BufferSample, Transition
from rollax.buffers._episode import EpisodeBuffer, EpisodeBufferState, EpisodeSample
from rollax.buffers._trajectory import BufferState, SequenceBuffer
from rollax.buffers._transition import TransitionBuffer

__all__ = [
    "BufferSample",
    "BufferState",
    "EpisodeBuffer",
    "EpisodeBufferState",
    "EpisodeSample",
    "SequenceBuffer",
    "Transition",
    "TransitionBuffer",
]
