"""Database access: engine factory for SQLite and PostgreSQL, declarative base, portable column types."""
