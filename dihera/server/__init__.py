"""The di-server: DI-orchestrator-compatible routes and a clean API to read and scale running DIJobs.

``create_app(settings, backend)`` builds the FastAPI app; ``dihera server`` runs it with uvicorn.
All Kubernetes access goes through the backend (``dihera.server.backend.KubeBackend`` over
``dihera.kube``); tests pass a fake one.

- ``app``: the FastAPI app; ``routes``: one router per API; ``run``: serving it; ``settings``
- ``dependencies``: what every job route depends on: who calls and may they, the job, scaling (with
  ``idempotency``); ``access``: the reviews, remembered briefly
- ``backend``: the cluster as one small interface; ``views``: what the routes answer (pure); ``pages``: the
  views as HTML; ``answers``: reads' JSON reused per version; ``fastpath``: remembered reads before the
  framework; ``gate``: a request body's token checked before it is read, and its size bounded
- ``training``: the replicas' RL reports, kept per job and written to ``status.training`` at most once a second
- ``models``: the request and response bodies; ``errors``: how errors are answered; ``metrics``
"""

from __future__ import annotations

from dihera.server.app import create_app
from dihera.server.backend import Backend, KubeBackend
from dihera.server.settings import ServerSettings

__all__ = ["Backend", "KubeBackend", "ServerSettings", "create_app"]
