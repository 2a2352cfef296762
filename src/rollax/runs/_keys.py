"""The random keys of a training run, all derived from its one seed.

Every use of randomness in a run (initialization and training, the final evaluation, the
recorded video) takes its own stream, folded from one root key per run. Neighbouring seeds
therefore never share a stream: run ``s``'s evaluation is not run ``s + 1``'s
initialization, as it would be with ``key(seed + 1)``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax

from rollax.types import PRNGKey

__all__ = ["RunKeys", "run_keys"]


class RunKeys(NamedTuple):
    """The root key of each of a run's random streams.

    Attributes:
        init: The agent's ``init`` (parameters, environments, and every key training uses).
        evaluate: Evaluation episodes.
        video: The recorded episode.
    """

    init: PRNGKey
    evaluate: PRNGKey
    video: PRNGKey


def run_keys(seed: int) -> RunKeys:
    """The keys of the run with this seed: ``fold_in(key(seed), i)`` for stream ``i``."""
    root = jax.random.key(seed)
    return RunKeys(*(jax.random.fold_in(root, i) for i in range(len(RunKeys._fields))))
