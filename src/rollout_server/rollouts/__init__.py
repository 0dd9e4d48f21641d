"""Rollouts, trace events, scores and batch ingestion."""
