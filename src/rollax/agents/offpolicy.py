"""The off-policy driver's pieces, each callable on its own.

An off-policy agent (DQN, SAC, TD3, or one built with
:func:`rollax.agents.build_offpolicy_agent`) is a loop of :func:`iteration`:
``train_every`` calls of :func:`act_and_store`, then :func:`learning_phase`:
:func:`learn_from_replay` once the replay holds ``learning_starts`` transitions per seed.
:func:`act_and_store` is :func:`explore` (the actions, before the environments step), the
environments' step and :func:`store` (the transitions stored): environments stepped outside
the program (on the host) go between the two. :func:`store` is :func:`stored_transition`
added to the replay and :func:`advance` (the rest of the state): actors apart from the
learner advance their own copy, and the learner adds their transitions. Each takes the agent's
:class:`OffPolicyDriver` (``agent.driver``) and one seed's state on one shard (no seed or
shard axis), and composes under ``jax.jit``: a custom loop, or actors that fill the replay
apart from the learner, call them directly.
"""

from rollax.agents._offpolicy import (
    ADVANCED,
    OffPolicyDriver,
    act_and_store,
    advance,
    draw_samples,
    explore,
    iteration,
    learn_from_replay,
    learning_phase,
    store,
    stored_transition,
)

__all__ = [
    "ADVANCED",
    "OffPolicyDriver",
    "act_and_store",
    "advance",
    "draw_samples",
    "explore",
    "iteration",
    "learn_from_replay",
    "learning_phase",
    "store",
    "stored_transition",
]
