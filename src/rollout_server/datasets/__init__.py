"""Datasets, versions and tasks."""
