"""Command-line interface (``reteco-measures``)."""
