"""Adapters between rollax and other libraries, each behind its extra.

- ``rollax.adapters.gymnasium`` (``rollax[gymnasium]``): rollax environments as Gymnasium
  environments, single and vectorized, registered as ``rollax/<id>``.
- ``rollax.adapters.gymnax`` (``rollax[gymnax]``): any gymnax environment as
  ``rollax.make("gymnax/<id>")``, with rollax's reset, truncation and ``final_obs`` semantics.
- ``rollax.adapters.brax`` (``rollax[brax]``): any Brax environment as
  ``rollax.make("brax/<name>")``.
- ``rollax.adapters.craftax`` (``rollax[craftax]``), ``rollax.adapters.jumanji``
  (``rollax[jumanji]``), ``rollax.adapters.xminigrid`` (``rollax[xminigrid]``): procedurally
  generated worlds as ``rollax.make("craftax/<variant>")``, ``"jumanji/<id>"`` and
  ``"xminigrid/<id>"``, every episode in a new world.
- ``rollax.adapters.torchrl`` (``rollax[torchrl]``): a rollax batch as a TorchRL ``EnvBase``.
- ``rollax.adapters.sb3`` (``rollax[sb3]``): a rollax batch as a Stable-Baselines3 ``VecEnv``
  (SB3's agents, and SBX's with ``rollax[sbx]``).
"""
