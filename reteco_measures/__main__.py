"""``python -m reteco_measures`` = the ``reteco-measures`` command."""

import sys

from .cli.entry import main

sys.exit(main())
