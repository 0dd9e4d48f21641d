"""Pieces shared by every feature: pagination, wire-schema base class."""
