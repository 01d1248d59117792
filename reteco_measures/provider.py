"""Kept for one release: the provider moved to `reteco_measures.providers.reteco`."""

from .providers.reteco import *  # noqa: F401,F403
