"""``python -m dihera``: the dihera command."""

import sys

from dihera.cli import main

sys.exit(main())
