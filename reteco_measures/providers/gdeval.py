"""ERR@k through ir_measures' gdeval provider for any query id.

ir_measures computes ``ERR@k`` (Chapelle et al., "Expected reciprocal rank for graded relevance",
CIKM 2009) only with ``gdeval.pl``, the TREC Web track's script. That script accepts a topic
only when its id is an integer once everything up to the last ``-`` is cut off, and a grade only
up to its ``MAX_JUDGMENT`` (4); any other line stops it with "format error" — ids such as
``9-1_3`` or ``ex_3025#turn1`` made ``ERR@10`` an internal error. It also prints an ``amean``
row, which ir_measures passed on as a query.

`GdevalEvaluator` gives gdeval the same data with the query ids numbered 1, 2, … (the
script's sort order is numeric, so the numbering changes nothing else), maps its rows back to
the original ids, drops ``amean``, and refuses a grade above 4 with the query and document named
instead of a script failure. The values are gdeval's own.

``rm.calc_aggregate`` / ``rm.iter_calc`` / ``rm.evaluate`` and the command line use it through
`pipeline` (ir_measures' default pipeline with gdeval replaced, built per call: nothing global
changes). Plain ``ir_measures`` calls keep ir_measures' own gdeval provider unless the user opts in
with `install`.
"""

from __future__ import annotations

import os
import pkgutil
import subprocess
import tempfile
from collections.abc import Iterator
from typing import Any

import ir_measures
import numpy as np
from ir_measures import Metric
from ir_measures.providers.fallback_provider import FallbackProvider
from ir_measures.providers.gdeval_provider import GdevalEvaluator as _Upstream
from ir_measures.providers.gdeval_provider import GdevalProvider as _UpstreamProvider

from ..io.convert import as_qrels_frame, as_run_frame

__all__ = ["GdevalEvaluator", "GdevalProvider", "MAX_GRADE", "install", "pipeline", "PROVIDER"]

#: the largest grade gdeval.pl accepts (its ``$MAX_JUDGMENT``): ERR's stop probability is
#: ``(2**g - 1) / 2**4``
MAX_GRADE = 4


class GdevalEvaluator(_Upstream):
    """gdeval on numbered query ids (see the module docstring)."""

    def _iter_calc(self, run: Any) -> Iterator[Metric]:
        qrels = as_qrels_frame(self.qrels)
        frame = as_run_frame(run)
        too_big = qrels["relevance"].to_numpy() > MAX_GRADE
        if too_big.any():
            row = qrels[too_big].iloc[0]
            raise ValueError(
                f"ERR is computed by gdeval, which accepts grades up to {MAX_GRADE}: query {row['query_id']!r}, "
                f"document {row['doc_id']!r} has grade {int(row['relevance'])} ({int(too_big.sum())} such "
                "judgments); map the grades to 0-4 first")
        ids = np.unique(np.concatenate([qrels["query_id"].astype(str).to_numpy(),
                                        frame["query_id"].astype(str).to_numpy()]))
        number = {q: i + 1 for i, q in enumerate(ids.tolist())}
        with tempfile.TemporaryDirectory(prefix="reteco-gdeval-") as tmp:
            script = os.path.join(tmp, "gdeval.pl")
            with open(script, "wb") as f:
                f.write(pkgutil.get_data("ir_measures", "bin/gdeval.pl") or b"")
            qpath, rpath = os.path.join(tmp, "qrels"), os.path.join(tmp, "run")
            q_num = qrels["query_id"].astype(str).map(number).astype(str)
            lines = q_num + " 0 " + qrels["doc_id"].astype(str) + " " + qrels["relevance"].astype(int).astype(str)
            with open(qpath, "w", encoding="utf-8") as f:
                f.write("\n".join(lines.tolist()) + ("\n" if len(lines) else ""))
            r_num = frame["query_id"].astype(str).map(number).astype(str)
            scores = frame["score"].astype(float).map(repr)
            lines = r_num + " Q0 " + frame["doc_id"].astype(str) + " 1 " + scores + " run"
            with open(rpath, "w", encoding="utf-8") as f:
                f.write("\n".join(lines.tolist()) + ("\n" if len(lines) else ""))
            back = {str(v): k for k, v in number.items()}
            for cutoff, ndcg_measure, err_measure in self.invocations:
                out = subprocess.run(["perl", script, qpath, rpath, str(cutoff)], capture_output=True, check=False)
                if out.returncode != 0:
                    raise RuntimeError(f"gdeval failed: {out.stderr.decode(errors='replace').strip()}")
                for line in out.stdout.decode().splitlines()[1:]:
                    parts = line.split(",")
                    if len(parts) != 4 or parts[1] not in back:  # the 'amean' row
                        continue
                    qid = back[parts[1]]
                    if ndcg_measure is not None:
                        yield Metric(query_id=qid, measure=ndcg_measure, value=float(parts[2]))
                    if err_measure is not None:
                        yield Metric(query_id=qid, measure=err_measure, value=float(parts[3]))


class GdevalProvider(_UpstreamProvider):
    """ir_measures' gdeval provider with `GdevalEvaluator`."""

    def _evaluator(self, measures: Any, qrels: Any) -> GdevalEvaluator:
        upstream = super()._evaluator(measures, qrels)
        return GdevalEvaluator(upstream.measures, upstream.qrels, upstream.invocations)


#: the one `GdevalProvider` (used by `pipeline` and `install`)
PROVIDER = GdevalProvider()


def pipeline() -> FallbackProvider:
    """ir_measures' default pipeline as it stands, with ir_measures' gdeval provider replaced by
    `PROVIDER`: a new object, ``ir_measures.DefaultPipeline`` is left as it is."""
    providers = [PROVIDER if getattr(p, "NAME", None) == PROVIDER.NAME else p
                 for p in ir_measures.DefaultPipeline.providers]
    return FallbackProvider(providers)


def install() -> None:
    """Opt-in for plain ir_measures calls: put `PROVIDER` in place of ir_measures' gdeval
    provider (registry and default pipeline), so ``ir_measures.calc_aggregate([ERR@10], ...)``
    accepts any query id. Idempotent. (``rm.*`` calls need no such call: they use `pipeline`.)"""
    old = ir_measures.providers.registry.get("gdeval")
    if isinstance(old, GdevalProvider):
        return
    new = PROVIDER
    ir_measures.providers.registry["gdeval"] = new
    pipeline = ir_measures.DefaultPipeline.providers
    pipeline[:] = [new if p is old else p for p in pipeline]
