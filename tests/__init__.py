"""Test suite for the Rollout service."""
