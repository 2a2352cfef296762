"""The on-policy driver's pieces, each callable on its own (Brax's and PureJaxRL's shape).

An on-policy agent (PPO, PQN, or one built with :func:`rollax.agents.build_onpolicy_agent`)
is a loop of :func:`iteration`, which is :func:`rollout` then :func:`learn` (:func:`update`,
then the observation statistics, counters and metrics); a rollout's step is
:func:`policy_step`, the environments' step and :func:`final_value`, and :func:`bootstrap`
fills in its successors' values. Each takes the
agent's :class:`OnPolicyDriver` (``agent.driver``) and one seed's state on one shard (no seed
or shard axis), and composes under ``jax.jit``: a custom loop, or an actor that collects
rollouts apart from the learner, calls them directly.

Examples:
    >>> state, data = rollout(agent.driver, one)          # doctest: +SKIP
    >>> params, opt_state, metrics = update(agent.driver, state, data, key)  # doctest: +SKIP
    >>> state, metrics = learn(agent.driver, state, data)  # doctest: +SKIP
"""

from rollax.agents._onpolicy import (
    OnPolicyDriver,
    act,
    bootstrap,
    final_value,
    init_state,
    iteration,
    learn,
    policy_step,
    rollout,
    update,
)

__all__ = [
    "OnPolicyDriver",
    "act",
    "bootstrap",
    "final_value",
    "init_state",
    "iteration",
    "learn",
    "policy_step",
    "rollout",
    "update",
]
