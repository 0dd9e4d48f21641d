"""Runs: executions of a dataset version, their task lists and aggregates."""
