"""Models: the `ModelClient` seam, routes and the router, retries and fallbacks, adapters."""

from jeeves.models.base import ModelClient, Route
from jeeves.models.router import Router

__all__ = ["ModelClient", "Route", "Router"]
