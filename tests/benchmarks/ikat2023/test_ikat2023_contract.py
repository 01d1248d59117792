"""The ``ikat`` contract: the organisers' sample run, hand-built runs with known conversions, and
malformed variants (each problem names the turn and the field; good turns are never lost)."""

from __future__ import annotations

import copy
import functools
import json
import tempfile
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import reteco_measures as rm
from reteco_measures.benchmarks.ikat2023.contract import convert_ikat_run
from reteco_measures.benchmarks.ikat2023.data import load_ikat_topics


@pytest.fixture(scope="module")
def sample_path(ikat2023_dir: Path) -> Path:
    return ikat2023_dir / "2023_sample_run.json"


@pytest.fixture(scope="module")
def sample(sample_path: Path) -> dict:
    return json.loads(sample_path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def topics(ikat2023_dir: Path, tmp_path_factory) -> pd.DataFrame:
    root = tmp_path_factory.mktemp("ikroot")
    (root / "ikat2023").symlink_to(ikat2023_dir, target_is_directory=True)
    return load_ikat_topics("test", root=root)


def test_sample_run_is_valid_and_converted(sample_path: Path, sample: dict, topics: pd.DataFrame):
    report = convert_ikat_run(sample_path, queries=topics, passage_score="position")
    # only problem: the 326 test turns the sample does not cover (one summary line); the organisers'
    # validator refuses a run that does not answer every turn, so this is an error
    assert [(p.kind, p.severity) for p in report.errors] == [("missing_query", "error")]
    assert not report.valid
    assert rm.validate_run(sample_path, "ikat", queries=[t["turn_id"] for t in sample["turns"]]).ok
    assert len(report.missing_queries) == 332 - 6
    run = report.run
    assert list(run.columns) == ["query_id", "doc_id", "score", "rank", "line"]
    # expected conversion from the JSON itself: responses by rank, passages in order, first wins
    for turn in sample["turns"]:
        order: list[str] = []
        for resp in sorted(turn["responses"], key=lambda r: r["rank"]):
            order += [p["id"] for p in resp["passage_provenance"] if p["id"] not in order]
        got = run[run["query_id"] == turn["turn_id"]]
        assert got["doc_id"].tolist() == order
        assert got["rank"].tolist() == list(range(1, len(order) + 1))
        assert got["score"].tolist() == pytest.approx([1 / r for r in range(1, len(order) + 1)])
    ptkb = report.extra["ptkb_run"]
    first = sample["turns"][0]["responses"][0]["ptkb_provenance"]
    assert ptkb[ptkb["query_id"] == "9-1_1"]["doc_id"].tolist() == [p["id"] for p in first]
    assert report.extra["run_name"] == "generated_run" and report.extra["run_type"] == "manual"
    assert len(report.extra["responses"]) == 18


def _run(turns: list[dict], **top) -> dict:
    return {"run_name": "r", "run_type": "automatic", "turns": turns, **top}


def _resp(rank: int, passages: list[tuple[str, float]], ptkb: list[tuple[str, float]] = (("1", 1.0),),
          text: str = "an answer") -> dict:
    return {
        "rank": rank,
        "text": text,
        "passage_provenance": [{"id": p, "text": "t", "score": s, "used": True} for p, s in passages],
        "ptkb_provenance": [{"id": i, "text": None, "score": s} for i, s in ptkb],
    }


P = [f"clueweb22-en0000-00-0000{i}:0" for i in range(10)]


def test_first_occurrence_across_responses_in_rank_order():
    run = _run([{"turn_id": "9-1_1", "responses": [
        _resp(2, [(P[3], 0.9), (P[0], 0.8)], [("4", 1.0), ("1", 0.5)]),  # listed first but rank 2
        _resp(1, [(P[0], 5.0), (P[1], 4.0), (P[2], 3.0)], [("1", 1.0), ("2", 0.5)]),
    ]}])
    report = convert_ikat_run(run, passage_score="position")
    # listing rank 2 before rank 1 is reported (a note: the organisers' check only compares with 0)...
    assert [(p.kind, p.severity, p.message) for p in report.errors] == [
        ("order", "note", "responses[1].rank: 1 does not increase (previous 2)")]
    # ...and the conversion still follows the ranks: rank 1 response first: P0 P1 P2, then rank 2: P3 (P0 already taken)
    assert report.run["doc_id"].tolist() == [P[0], P[1], P[2], P[3]]
    assert report.run["score"].tolist() == pytest.approx([1, 1 / 2, 1 / 3, 1 / 4])
    assert report.extra["ptkb_run"]["doc_id"].tolist() == ["1", "2", "4"]
    # 'provenance' keeps the submitted score of the first occurrence; trec_eval then orders by it
    prov = convert_ikat_run(run, passage_score="provenance")
    assert dict(zip(prov.run["doc_id"], prov.run["score"], strict=True)) == {P[0]: 5.0, P[1]: 4.0, P[2]: 3.0,
                                                                              P[3]: 0.9}
    assert prov.run.set_index("doc_id").loc[P[3], "rank"] == 4


def test_provenance_scores_ranked_by_trec_eval_rules():
    run = _run([{"turn_id": "9-1_1", "responses": [
        _resp(1, [(P[0], 1.0), (P[1], 2.0)]),  # increasing score: reported, kept
    ]}])
    prov = convert_ikat_run(run, passage_score="provenance")
    assert prov.run.set_index("doc_id")["rank"].to_dict() == {P[1]: 1, P[0]: 2}
    assert [(p.kind, p.severity) for p in prov.errors] == [("order", "warning")]
    assert "responses[0].passage_provenance[1].score" in prov.errors[0].message


def _messages(report) -> list[str]:
    return [str(p) for p in report.errors]


def test_malformed_fields_name_turn_and_field(sample: dict, topics: pd.DataFrame):
    bad = copy.deepcopy(sample)
    bad["run_type"] = "semi"
    t0, t1, t2 = bad["turns"][0], bad["turns"][1], bad["turns"][2]
    t0["responses"][0]["passage_provenance"][3]["score"] = "high"
    t0["responses"][1]["rank"] = 0
    t1["responses"][0]["ptkb_provenance"][1]["id"] = "99"
    t1["responses"][0]["ptkb_provenance"][0]["text"] = "I am someone else."
    t1["responses"][2]["text"] = ""
    t2["responses"][0]["passage_provenance"][0]["id"] = "clueweb22-en0004-67-08978"  # no passage number
    t2["responses"][0]["passage_provenance"][1]["used"] = "yes"
    del t2["responses"][1]["ptkb_provenance"]
    bad["turns"][3]["turn_id"] = "99-9_1"
    bad["turns"].append(copy.deepcopy(bad["turns"][4]))  # repeated turn
    report = convert_ikat_run(json.dumps(bad), queries=topics)
    msgs = _messages(report)

    def has(turn: str, text: str) -> bool:
        return any(f": {turn}: " in m and text in m for m in msgs)

    assert any("run_type: must be 'automatic' or 'manual' (found 'semi')" in m for m in msgs)
    assert has("9-1_1", "responses[0].passage_provenance[3].score: 'high' is not a finite number")
    assert has("9-1_1", "responses[1].rank: missing or 0")
    assert has("9-1_1", "responses[1].rank: 0 is not greater than 0")
    assert has("9-1_2", "responses[0].ptkb_provenance[1].id: '99' is not a statement of this conversation's PTKB")
    assert has("9-1_2", "responses[0].ptkb_provenance[0].text: does not match PTKB statement")
    assert has("9-1_2", "responses[2].text: empty")
    assert has("9-1_3", "responses[0].passage_provenance[0].id")
    assert has("9-1_3", "responses[0].passage_provenance[1].used: must be true or false")
    assert has("9-1_3", "responses[1].ptkb_provenance: missing")
    assert has("99-9_1", "turn_id: not a turn of the topics")
    assert has("9-1_5", "turn_id: repeated")
    # the organisers' validator refuses this run (a non-numeric score, an unknown PTKB id, a PTKB text
    # mismatch, `used` as a string, an unknown turn are errors; a repeated turn is an error of ours),
    # yet it is converted
    assert not report.valid
    errors = {(p.query_id, p.kind) for p in report.problems_of("error")}
    assert {("9-1_1", "score"), ("9-1_2", "unknown_doc"), ("99-9_1", "unknown_query"), ("9-1_5", "duplicate")} <= errors
    # good turns are intact: 9-1_6 converts exactly as in the clean sample
    clean = convert_ikat_run(sample, queries=topics).run
    assert report.run[report.run["query_id"] == "9-1_6"]["doc_id"].tolist() == \
        clean[clean["query_id"] == "9-1_6"]["doc_id"].tolist()
    # the unknown turn is dropped; the bad PTKB id is not in the PTKB ranking
    assert "99-9_1" not in set(report.run["query_id"])
    ptkb = report.extra["ptkb_run"]
    assert "99" not in set(ptkb.loc[ptkb["query_id"] == "9-1_2", "doc_id"])


def test_structural_failures_make_the_report_invalid(tmp_path: Path):
    broken = tmp_path / "run.json"
    broken.write_text('{"run_name": "x",\n "turns": [\n  {"turn_id": "9-1_1",, }\n]}', encoding="utf-8")
    report = rm.validate_run(broken, "ikat")
    assert not report.valid and len(report.run) == 0
    assert str(report.errors[0]).startswith(f"{broken}:3: -: not valid JSON")
    for text, needle in (("[1, 2]", "must be a JSON object"), ('{"run_name": "x", "run_type": "manual"}',
                                                               "turns: missing")):
        report = convert_ikat_run(text)
        assert not report.valid and needle in _messages(report)[-1]


def test_line_numbers_point_at_the_turn(tmp_path: Path):
    run = _run([{"turn_id": "9-1_1", "responses": [_resp(1, [(P[0], 1.0)])]},
                {"turn_id": "9-1_2", "responses": [_resp(1, [(P[1], 1.0)], text="")]}])
    path = tmp_path / "run.json"
    text = json.dumps(run, indent=1)
    path.write_text(text, encoding="utf-8")
    report = rm.validate_run(path, "ikat")
    line = next(i for i, ln in enumerate(text.splitlines(), start=1) if '"9-1_2"' in ln)
    assert _messages(report) == [f"{path}:{line}: 9-1_2: responses[0].text: empty"]


def test_corpus_filters_unknown_passages():
    run = _run([{"turn_id": "9-1_1", "responses": [_resp(1, [(P[0], 3.0), (P[1], 2.0), (P[2], 1.0)])]}])
    report = convert_ikat_run(run, corpus=[P[0], P[2]])
    assert report.run["doc_id"].tolist() == [P[0], P[2]]
    assert report.run["rank"].tolist() == [1, 2]
    assert [p.kind for p in report.errors] == ["unknown_doc"]


def test_validate_run_accepts_a_dataset_name(sample_path: Path, ikat2023_dir: Path, tmp_path: Path, monkeypatch):
    (tmp_path / "ikat2023").symlink_to(ikat2023_dir, target_is_directory=True)
    monkeypatch.setenv("RETECO_DATA", str(tmp_path))
    report = rm.validate_run(sample_path, "ikat", queries="ikat/2023/test/judged")
    # turns outside the judged subset are not turns of these topics: errors for the organisers' validator
    assert not report.valid and {p.kind for p in report.problems_of("error")} <= {"unknown_query", "missing_query"}
    assert len(report.missing_queries) == 176 - 6 + sum(
        1 for t in ("9-1_1", "9-1_2", "9-1_3", "9-1_4", "9-1_5", "9-1_6")
        if t not in set(rm.topics("ikat/2023/test/judged")["query_id"]))


# --------------------------------------------------------------------------------------------
# property: random damage never crashes, never loses undamaged turns

_DAMAGE = st.sampled_from(["drop_field", "wrong_type", "negative", "nan_string", "empty_list"])


def _damage(obj: dict, kind: str, key: str) -> None:
    if kind == "drop_field":
        obj.pop(key, None)
    elif kind == "wrong_type":
        obj[key] = {"unexpected": [1, 2]}
    elif kind == "negative":
        obj[key] = -1
    elif kind == "nan_string":
        obj[key] = "NaN"
    else:
        obj[key] = []


@functools.lru_cache(maxsize=1)
def _sample_and_topics(ikat2023_dir: Path) -> tuple[dict, pd.DataFrame, object]:
    sample = json.loads((ikat2023_dir / "2023_sample_run.json").read_text(encoding="utf-8"))
    root = Path(tempfile.mkdtemp(prefix="ikroot"))
    (root / "ikat2023").symlink_to(ikat2023_dir, target_is_directory=True)
    topics = load_ikat_topics("test", root=root)
    return sample, topics, convert_ikat_run(sample, queries=topics)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 5), st.integers(0, 2), st.sampled_from(["rank", "text", "passage_provenance",
                                                              "ptkb_provenance", "responses", "turn_id",
                                                              "score", "id", "used"]), _DAMAGE)
def test_random_damage_is_reported_and_contained(ikat2023_dir, t_index, r_index, key, kind):
    # benign: "NaN" is a valid response text; `used` is optional (the official schema defaults it to false)
    assume((key, kind) not in {("text", "nan_string"), ("used", "drop_field")})
    sample, topics, clean = _sample_and_topics(ikat2023_dir)
    run = copy.deepcopy(sample)
    turn = run["turns"][t_index]
    if key in ("responses", "turn_id"):
        target = turn
    elif key in ("score", "id", "used"):
        target = turn["responses"][r_index]["passage_provenance"][0]
    else:
        target = turn["responses"][r_index]
    _damage(target, kind, key)
    report = convert_ikat_run(run, queries=topics)
    damaged_turn = sample["turns"][t_index]["turn_id"]
    reported = [p for p in report.errors if p.kind != "missing_query"]
    names = {damaged_turn, str(turn.get("turn_id"))}  # a damaged turn_id is reported under its new value
    assert any(p.query_id in names or "turns[" in p.message for p in reported), (key, kind)
    # every other turn converts exactly as in the clean run
    for other in {t["turn_id"] for t in sample["turns"]} - {damaged_turn}:
        a = report.run[report.run["query_id"] == other]["doc_id"].tolist()
        b = clean.run[clean.run["query_id"] == other]["doc_id"].tolist()
        assert a == b


def test_queries_as_plain_ids_check_turns_only(sample: dict):
    ids = [t["turn_id"] for t in sample["turns"]][:5]  # 9-1_6 is not expected
    report = convert_ikat_run(sample, queries=ids)
    assert [(p.kind, p.query_id) for p in report.errors] == [("unknown_query", "9-1_6")]
    assert set(report.run["query_id"]) == set(ids)


def test_queries_as_topics_json_path(sample_path: Path, ikat2023_dir: Path, sample: dict):
    bad = copy.deepcopy(sample)
    bad["turns"][0]["responses"][0]["ptkb_provenance"][0]["id"] = "42"
    report = rm.validate_run(bad, "ikat", queries=ikat2023_dir / "2023_test_topics.json")
    assert len(report.missing_queries) == 326
    assert any(p.query_id == "9-1_1" and "'42' is not a statement" in p.message for p in report.errors)


# -- the organisers' 2023 validator (main.py, utils.py): run_type and the warning count (issue 24) --
# Their rules, as written in 2023/scripts/run_validation:
#   validate_run:  len(run_type) == 0 → warning; run_type != 'automatic' and != 'manual' → warning
#   check_response (previous_rank is always 0: validate_turn sets it once and never updates it):
#                  rank == 0 → warning; rank <= previous_rank → warning
#   after each turn (topics in order of first appearance, their turns in file order):
#                  total_warnings > max_warnings → "aborting", exit 255


def _one_turn_run(run_type=None, rank=1, **top) -> dict:
    resp = {"rank": rank, "text": "an answer",
            "passage_provenance": [{"id": "clueweb22-en0000-00-00000:0", "text": "t", "score": 1.0, "used": True}],
            "ptkb_provenance": [{"id": "1", "text": "x", "score": 1.0}]}
    if rank is _NO_RANK:
        del resp["rank"]
    run = {"run_name": "r", "run_type": run_type, "turns": [{"turn_id": "9-1_1", "responses": [resp]}], **top}
    return run


_NO_RANK = object()


def _warnings(report) -> list[str]:
    return [p.message for p in report.problems_of("warning")]


@pytest.mark.parametrize(("run_type", "expected"), [
    ("automatic", 0), ("manual", 0),
    ("only_response", 1),  # allowed from 2024 on; the 2023 validator warns
    ("Automatic", 1), ("semi", 1),
    ("", 2), (None, 2),  # empty (JSON null is the schema's default, ''): both checks warn
])
def test_run_type_warnings_as_the_organisers_count_them(run_type, expected) -> None:
    report = convert_ikat_run(_one_turn_run(run_type))
    got = [m for m in _warnings(report) if m.startswith("run_type")]
    assert len(got) == expected, got
    assert report.valid


@pytest.mark.parametrize(("rank", "expected"), [(0, 2), (_NO_RANK, 2), (None, 2), (-3, 1), (1, 0), (7, 0)])
def test_rank_warnings_as_the_organisers_count_them(rank, expected) -> None:
    report = convert_ikat_run(_one_turn_run("automatic", rank=rank), passage_score="position")
    got = [m for m in _warnings(report) if ".rank" in m]
    assert len(got) == expected, got


def test_rank_outside_int32_is_an_error_as_the_schema_refuses_it() -> None:
    assert convert_ikat_run(_one_turn_run("automatic", rank=2**31 - 1)).valid
    report = convert_ikat_run(_one_turn_run("automatic", rank=2**31))
    assert not report.valid
    assert any("32-bit integer range" in p.message for p in report.problems_of("error"))


def test_issue_case_four_rank_zero_responses_per_turn_is_aborted_at_2008_warnings(ikat2023_dir: Path) -> None:
    topics_path = ikat2023_dir / "2023_test_topics.json"
    conversations = json.loads(topics_path.read_text(encoding="utf-8"))
    turns = []
    for conv in conversations:
        pid, statement = next(iter(conv["ptkb"].items()))
        for turn in conv["turns"]:
            resp = {"rank": 0, "text": "an answer",
                    "passage_provenance": [{"id": "clueweb22-en0000-00-00000:0", "text": "", "score": 1.0,
                                            "used": True}],
                    "ptkb_provenance": [{"id": pid, "text": statement, "score": 1.0}]}
            turns.append({"turn_id": f"{conv['number']}_{turn['turn_id']}", "responses": [resp] * 4})
    run = {"run_name": "rank0", "run_type": "automatic", "turns": turns}
    assert len(turns) == 332
    # by the organisers' rule: 4 responses x 2 warnings = 8 per turn; after turn 250 the count is
    # 2000 (not above 2000), after turn 251 it is 2008 > 2000: aborted there, exit 255
    order = sorted(range(len(turns)), key=lambda i: (
        list(dict.fromkeys(t["turn_id"].split("_")[0] for t in turns)).index(turns[i]["turn_id"].split("_")[0]), i))
    report = convert_ikat_run(run, queries=topics_path)
    assert len(report.problems_of("warning")) == 332 * 8
    assert not report.valid
    [abort] = [p for p in report.problems_of("error")]
    assert abort.kind == "too_many" and abort.query_id == turns[order[250]]["turn_id"]
    assert abort.message.startswith("2008 warnings after turn ")
    # without the organisers' limit the run is valid (warnings only)
    assert convert_ikat_run(run, queries=topics_path, max_warnings=None).valid
    # three rank-0 responses per turn: 6 x 332 = 1992 warnings, not above 2000: not aborted
    three = {**run, "turns": [{**t, "responses": t["responses"][:3]} for t in turns]}
    assert convert_ikat_run(three, queries=topics_path).valid


def test_the_abort_follows_the_organisers_turn_order() -> None:
    # turns in file order A_1, B_1, A_2; the organisers validate topic A first: A_1, A_2, then B_1
    def turn(tid: str, n_rank0: int) -> dict:
        resp = _one_turn_run("automatic", rank=1)["turns"][0]["responses"][0]
        return {"turn_id": tid, "responses": [resp] + [{**resp, "rank": 0}] * n_rank0}

    # warnings per turn: A_1 0, B_1 2 x 3 = 6, A_2 2 x 1 = 2 → organisers' counts 0, 2, 8
    run = {"run_name": "r", "run_type": "automatic", "turns": [turn("A_1", 0), turn("B_1", 3), turn("A_2", 1)]}
    report = convert_ikat_run(run, max_warnings=5)
    [abort] = report.problems_of("error")
    assert abort.query_id == "B_1" and abort.message.startswith("8 warnings after turn B_1, more than 5")
    assert convert_ikat_run(run, max_warnings=8).valid  # 8 is not above 8


def test_a_run_without_turns_is_not_counted_as_aborted() -> None:
    # the organisers log "0 turns, not performing any validation" and exit 0; ours is an error of
    # its own (nothing can be scored), never the warning-count abort
    report = convert_ikat_run({"run_name": "", "run_type": "", "turns": []}, max_warnings=0)
    assert [p.kind for p in report.problems_of("error")] == ["format"]
    assert "no turn" in report.problems_of("error")[0].message


@pytest.mark.parametrize("quoted", ["NaN", "Infinity", "-Infinity"])
def test_quoted_non_finite_scores_are_refused_as_ours_alone(quoted: str) -> None:
    # protobuf's JSON format spells non-finite floats as these strings; the organisers' validator
    # (protobuf's parser) accepts them; we refuse them and say that the refusal is ours
    run = _run([{"turn_id": "9-1_1", "responses": [_resp(1, [(P[0], 2.0), (P[1], 1.0)])]}])
    run["turns"][0]["responses"][0]["passage_provenance"][1]["score"] = quoted
    report = convert_ikat_run(run, passage_score="provenance")
    refused = [p for p in report.errors if p.severity == "error"]
    assert len(refused) == 1 and refused[0].kind == "score" and refused[0].doc_id == P[1]
    assert "protobuf's JSON spelling of a non-finite float" in refused[0].message
    assert "the organisers' validator accepts it, reteco-measures refuses it" in refused[0].message
    assert report.run["doc_id"].tolist() == [P[0]]  # the passage without a usable score is left out
