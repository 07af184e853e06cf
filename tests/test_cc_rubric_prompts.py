"""The shipped Auto-QA rubric and prompt texts: structure, label ids, prompt layout."""

from __future__ import annotations

import pytest

from cfbench.core.errors import InputError
from cfbench.studies.contact_center_qa import coaching, qa


def test_rubric_has_30_questions_in_6_categories():
    r = qa.load_rubric()
    assert len(r) == 30 and r["question_id"].is_unique
    assert (r["type"] == "subjective").sum() == 20 and (r["type"] == "objective").sum() == 10
    cats = r.groupby("category")["type"].agg(["first", "nunique", "size"])
    assert (cats["nunique"] == 1).all(), "a category mixes subjective and objective questions"
    assert (cats["first"] == "subjective").sum() == 4 and (cats["first"] == "objective").sum() == 2
    assert r["criteria"].map(len).min() >= 2
    assert r["paraphrases"].map(len).min() >= 2
    assert r.attrs["version"] == 1


def test_generator_label_ids_are_objective_questions():
    from cfbench.studies.contact_center_qa.synth.labels import LABEL_QUESTIONS

    r = qa.load_rubric().set_index("question_id")
    for q in LABEL_QUESTIONS:
        assert r.loc[q, "type"] == "objective"


def test_bad_rubric_names_record_and_field(tmp_path):
    p = tmp_path / "r.yaml"
    p.write_text("questions:\n  - id: q1\n    category: c\n    type: subjective\n    text: ok?\n"
                 "    criteria: [a]\n  - id: q1\n    category: c\n    type: objective\n    text: again?\n"
                 "    criteria: [b]\n", encoding="utf-8")
    with pytest.raises(InputError) as e:
        qa.load_rubric(str(p))
    assert e.value.record == "q1" and e.value.field == "id"
    p.write_text("questions:\n  - id: q2\n    category: c\n    type: maybe\n    text: x\n    criteria: [a]\n",
                 encoding="utf-8")
    with pytest.raises(InputError) as e:
        qa.load_rubric(str(p))
    assert e.value.record == "q2" and e.value.field == "type"


TURNS = [{"speaker": "agent", "text": "Hello, this is Ana."}, {"speaker": "customer", "text": "Hi."}]


@pytest.mark.parametrize("mode", qa.QA_MODES)
def test_transcript_comes_before_the_question(mode):
    r = qa.load_rubric().set_index("question_id")
    text = qa.format_transcript(TURNS, header="Agent role: Trainee")
    q1 = r.loc["issue_resolution"].to_dict()
    q2 = r.loc["work_avoidance"].to_dict()
    m1 = qa.qa_messages(text, q1, mode=mode)
    m2 = qa.qa_messages(text, q2, mode=mode)
    assert m1[0] == m2[0]
    u1, u2 = m1[1]["content"], m2[1]["content"]
    assert u1.index("Agent role: Trainee") < u1.index("Agent: Hello") < u1.index(q1["text"])
    # both questions share the whole transcript as a prompt prefix (KV-cache reuse)
    common = next(i for i, (a, b) in enumerate(zip(u1, u2)) if a != b)
    assert common > u1.index("Customer: Hi.")


def test_fairness_prompts_differ_and_name_the_three_rule_groups():
    text = qa.format_transcript(TURNS)
    q = qa.load_rubric().iloc[0].to_dict()
    base = qa.qa_messages(text, q)[0]["content"]
    fair = qa.qa_messages(text, q, fairness=True)[0]["content"]
    coach_fair = coaching.coaching_messages(text, "positives", fairness=True)[0]["content"]
    assert base != fair and fair != coach_fair
    for s in (fair, coach_fair):
        low = s.lower()
        assert "gender" in low and "past" in low and "formal" in low


def test_paraphrase_selection_and_bounds():
    q = qa.load_rubric().set_index("question_id").loc["issue_resolution"].to_dict() | {"question_id": "issue_resolution"}
    m = qa.qa_messages("Agent: x", q, paraphrase=1)
    assert q["paraphrases"][1] in m[1]["content"]
    with pytest.raises(InputError):
        qa.qa_messages("Agent: x", q, paraphrase=9)


def test_format_transcript_rejects_bad_turns():
    with pytest.raises(InputError) as e:
        qa.format_transcript([{"speaker": "bot", "text": "x"}], record="t1")
    assert e.value.record == "t1" and e.value.field == "turns"
    with pytest.raises(InputError):
        qa.format_transcript([{"speaker": "agent", "text": "  "}])
    with pytest.raises(InputError):
        qa.format_transcript([])
