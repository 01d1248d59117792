"""Kept for one release: the native-kernel routing moved to `reteco_measures.providers.native`."""

from ..providers.native import *  # noqa: F401,F403
