"""Adapters between rollax and other libraries, each behind its extra.

- ``rollax.adapters.gymnasium`` (``rollax[gymnasium]``): rollax environments as Gymnasium
  environments, single and vectorized, registered as ``rollax/<id>``.
"""
