"""Rollout server: one recorded attempt at one task, read as a trace, scored, exported."""

__version__ = "0.1.0"
