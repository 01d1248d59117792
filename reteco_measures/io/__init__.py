"""Input/output: readers for runs and qrels, conversions between formats, and a TREC run writer."""

from .convert import as_qrels_frame, as_run_frame, qrels_to_dict, run_to_dict
from .readers import read_qrels, read_run

__all__ = ["read_run", "read_qrels", "as_run_frame", "as_qrels_frame", "run_to_dict", "qrels_to_dict"]
