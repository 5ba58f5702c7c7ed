"""The HTTP API (FastAPI): the same answers as `ask`, for portals, chat front ends and the
page. `app.create_app` assembles it; see app.py for the map of routers."""

from .app import app_factory, create_app, run_server

__all__ = ["create_app", "app_factory", "run_server"]
