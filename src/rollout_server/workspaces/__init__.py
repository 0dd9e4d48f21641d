"""Workspaces, members and API keys."""
