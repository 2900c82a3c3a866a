"""The di-server: DI-orchestrator-compatible routes and a clean API to read and scale running DIJobs.

``create_app(settings, backend)`` builds the FastAPI app; ``dihera server`` runs it with uvicorn.
All Kubernetes access goes through the backend (``dihera.server.backend.KubeBackend`` over
``dihera.kube``); tests pass a fake one.
"""

from __future__ import annotations

from dihera.server.app import create_app
from dihera.server.backend import Backend, KubeBackend
from dihera.server.settings import ServerSettings

__all__ = ["Backend", "KubeBackend", "ServerSettings", "create_app"]
