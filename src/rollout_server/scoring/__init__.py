"""Scoring: scorers (built-in, LLM judge, webhook, entry points), the background job queue and its worker,
GRPO advantages and discards, and per-run score metrics."""
