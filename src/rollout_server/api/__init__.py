"""The REST API: dependencies and the v1 router that gathers every feature's routes."""
