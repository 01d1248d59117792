"""Where the benchmarks run: Codabench scoring programs and bundles, Harbor reward files.

* `reteco_measures.platforms.codabench` — the scoring program a SemEval task drops into
  Codabench (``input/ref`` + ``input/res`` → ``output/scores.json``, ``scores.txt``,
  ``detailed_results.html``) and the competition bundle that carries it.
* `reteco_measures.platforms.submission` — the bounded reader of an anonymous
  participant's upload (size, lines, files, time and memory limits; links, folders and damaged
  archives refused with a message).
* `reteco_measures.platforms.harbor` — Harbor's verifier step (`score_harbor`): the upload
  scored within limits, the reward file (``{"reward": r}``) with the diagnostics beside it.

Both are thin layers over `reteco_measures.benchmarks.Benchmark.score`: the numbers they
write are the numbers ``reteco-measures score NAME --format json`` prints.
"""

from .codabench import CodabenchResult, build_bundle, leaderboard_columns, score_codabench, scores_json
from .harbor import HarborOutcome, score_harbor, write_reward_files
from .submission import Submission, SubmissionError, SubmissionLimits, read_submission, run_bounded

__all__ = [
    "CodabenchResult",
    "score_codabench",
    "scores_json",
    "leaderboard_columns",
    "build_bundle",
    "write_reward_files",
    "score_harbor",
    "HarborOutcome",
    "Submission",
    "SubmissionError",
    "SubmissionLimits",
    "read_submission",
    "run_bounded",
]
