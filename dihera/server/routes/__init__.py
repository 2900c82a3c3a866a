"""The di-server's routes, one router per API: ``operations`` (health, readiness, metrics), DI-orchestrator's
``/v2alpha1`` (``v2alpha1``), the clean ``/v1`` (``v1``), and the read-only ``/ui`` views the Argo UI links to
(``ui``), and the redirect from a sweep's trial pod to its DIJob's view (``trials``).
"""

from dihera.server.routes.operations import router as operations
from dihera.server.routes.ui import router as ui
from dihera.server.routes.ui import trials
from dihera.server.routes.v1 import router as v1
from dihera.server.routes.v2alpha1 import router as v2alpha1

__all__ = ["operations", "trials", "ui", "v1", "v2alpha1"]
