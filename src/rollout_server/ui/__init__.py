"""The web UI: server-rendered pages (Jinja2 + HTMX) that call the same services as the REST API."""

from .app import install_ui

__all__ = ["install_ui"]
