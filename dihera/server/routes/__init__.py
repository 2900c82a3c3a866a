"""The di-server's routes, one router per API: ``operations`` (health, readiness, metrics), DI-orchestrator's
``/v2alpha1`` (``v2alpha1``), the clean ``/v1`` (``v1``), and the read-only ``/ui`` views the Argo UI links to
(``ui``), the redirect from a sweep's trial pod to its DIJob's view (``trials``), a sweep's view
(``experiments``) and the workflow link's redirect to a DIJob's or a sweep's view (``workflows``).
"""

from dihera.server.routes.operations import router as operations
from dihera.server.routes.ui import experiments, trials, workflows
from dihera.server.routes.ui import router as ui
from dihera.server.routes.v1 import router as v1
from dihera.server.routes.v2alpha1 import router as v2alpha1

__all__ = ["experiments", "operations", "trials", "ui", "v1", "v2alpha1", "workflows"]
