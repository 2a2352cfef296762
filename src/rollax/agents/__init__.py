"""Agents, each in its own folder: ``rollax.agents.ppo``."""
