"""``python -m reteco_measures`` = the ``reteco-measures`` command."""

import sys

from .cli.main import main

sys.exit(main())
