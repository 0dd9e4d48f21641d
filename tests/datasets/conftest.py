"""The web-page fixtures (a workspace with an owner, a member and a viewer), for the promote form's test."""

from tests.ui.conftest import owner, seeded, viewer, world

__all__ = ["owner", "seeded", "viewer", "world"]
