"""The Datasette plugin: each hook lives in a small module of its own."""

from .connection import prepare_connection, startup
from .routes import register_routes
from .templates import prepare_jinja2_environment

__all__ = ["prepare_connection", "prepare_jinja2_environment", "register_routes", "startup"]
