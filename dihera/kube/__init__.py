"""The only package that talks to Kubernetes. Everything else computes.

Modules: ``config`` (API client from a kubeconfig or in-cluster); further modules add typed
reads and writes for the controller and the di-server.
"""

from __future__ import annotations

from dihera.kube.config import api_client

__all__ = ["api_client"]
