"""Presentation of results: tables (text, markdown, LaTeX, CSV, JSON) and plots.

Nothing here computes a statistic: every number comes from the frames of a
`Comparison` (or of ``rm.evaluate``). Plots need the ``plot`` extra
(matplotlib, imported lazily): ``pip install 'reteco-measures[plot]'``.
"""

from __future__ import annotations

from .tables import FORMATS, format_comparison, to_csv, to_json, to_latex, to_markdown, to_text, wide_frame

__all__ = ["FORMATS", "format_comparison", "to_csv", "to_json", "to_latex", "to_markdown", "to_text", "wide_frame"]
