"""Writes the hostile-input corpus next to this file. Run once; the files are committed.

Every file is one way an input can be wrong. ``tests/test_hostile_*.py`` load
each and expect one clear ``cfbench.core.errors.InputError`` naming the record and
the field. (Huge fields are generated at test time, not committed.)
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent

T_OK = {"id": "t1", "domain": "retail", "agent_name": "Dana",
        "turns": [{"speaker": "agent", "text": "Hello, Dana speaking."},
                  {"speaker": "customer", "text": "My parcel never came."}],
        "labels": {"issue_resolution": "Yes"}, "meta": {}}


def jl(*records) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def t(**changes):
    rec = json.loads(json.dumps(T_OK))
    for k, v in changes.items():
        if v is _DROP:
            rec.pop(k)
        else:
            rec[k] = v
    return rec


_DROP = object()

FILES: dict[str, str | bytes] = {
    # ---- transcripts, JSONL
    "transcripts/empty.jsonl": "",
    "transcripts/only_blank_lines.jsonl": "\n\n   \n",
    "transcripts/not_json.jsonl": jl(T_OK) + "{id: t2, turns: []\n",
    "transcripts/top_level_array.jsonl": json.dumps([T_OK]) + "\n",
    "transcripts/missing_id.jsonl": jl(t(id=_DROP)),
    "transcripts/id_is_list.jsonl": jl(t(id=["t1"])),
    "transcripts/missing_turns.jsonl": jl(t(turns=_DROP)),
    "transcripts/turns_is_string.jsonl": jl(t(turns="agent: hello")),
    "transcripts/turns_empty.jsonl": jl(t(turns=[])),
    "transcripts/turn_text_null.jsonl": jl(t(turns=[{"speaker": "agent", "text": None}])),
    "transcripts/turn_text_number.jsonl": jl(t(turns=[{"speaker": "agent", "text": 42}])),
    "transcripts/unknown_speaker.jsonl": jl(t(turns=[{"speaker": "supervisor", "text": "hi"}])),
    "transcripts/label_not_yes_no.jsonl": jl(t(labels={"issue_resolution": "maybe"})),
    "transcripts/label_is_bool.jsonl": jl(t(labels={"issue_resolution": True})),
    "transcripts/labels_is_list.jsonl": jl(t(labels=["issue_resolution"])),
    "transcripts/meta_is_string.jsonl": jl(t(meta="none")),
    "transcripts/unknown_field.jsonl": jl(t(score=0.5)),
    "transcripts/duplicate_ids.jsonl": jl(T_OK, t(domain="banking")),
    "transcripts/latin1.jsonl": jl(T_OK).replace("Hello", "Hell\u00f6").encode("latin-1"),
    # ---- transcripts, CSV (one row per turn)
    "transcripts/empty.csv": "",
    "transcripts/header_only.csv": "id,turn,speaker,text\n",
    "transcripts/missing_text_column.csv": "id,turn,speaker\nt1,0,agent\n",
    "transcripts/unknown_column.csv": "id,turn,speaker,text,score\nt1,0,agent,Hello,0.4\n",
    "transcripts/turn_not_integer.csv": "id,turn,speaker,text\nt1,first,agent,Hello\n",
    "transcripts/turn_repeated.csv": "id,turn,speaker,text\nt1,0,agent,Hello\nt1,0,customer,Hi\n",
    "transcripts/ragged_row.csv": "id,turn,speaker,text\nt1,0,agent,Hello,extra,cells\n",
    "transcripts/empty_id.csv": "id,turn,speaker,text\n,0,agent,Hello\n",
    "transcripts/empty_text.csv": "id,turn,speaker,text\nt1,0,agent,\n",
    "transcripts/conflicting_domain.csv": ("id,turn,speaker,text,domain\nt1,0,agent,Hello,retail\n"
                                           "t1,1,customer,Hi,banking\n"),
    "transcripts/labels_not_json.csv": "id,turn,speaker,text,labels\nt1,0,agent,Hello,{resolved}\n",
    "transcripts/latin1.csv": "id,turn,speaker,text\nt1,0,agent,Gr\u00fc\u00df Gott\n".encode("latin-1"),
    # ---- matched pairs (ShopFlow), CSV and JSONL
    "pairs/empty.csv": "",
    "pairs/header_only.csv": "pair_id,variant,expected_ready,channel,score\n",
    "pairs/missing_channel_column.csv": ("pair_id,variant,expected_ready,score\np1,formal,true,0.9\n"
                                         "p1,casual,true,0.8\n"),
    "pairs/empty_channel_cell.csv": ("pair_id,variant,expected_ready,channel,score\np1,formal,true,,0.9\n"
                                     "p1,casual,true,chat,0.8\n"),
    "pairs/score_negative.csv": ("pair_id,variant,expected_ready,channel,score\np1,formal,true,chat,-0.2\n"
                                 "p1,casual,true,chat,0.8\n"),
    "pairs/score_above_one.csv": ("pair_id,variant,expected_ready,channel,score\np1,formal,true,chat,1.2\n"
                                  "p1,casual,true,chat,0.8\n"),
    "pairs/score_nan.csv": ("pair_id,variant,expected_ready,channel,score\np1,formal,true,chat,NaN\n"
                            "p1,casual,true,chat,0.8\n"),
    "pairs/score_text.csv": ("pair_id,variant,expected_ready,channel,score\np1,formal,true,chat,high\n"
                             "p1,casual,true,chat,0.8\n"),
    "pairs/expected_ready_text.csv": ("pair_id,variant,expected_ready,channel,score\np1,formal,sure,chat,0.9\n"
                                      "p1,casual,sure,chat,0.8\n"),
    "pairs/duplicate_row.csv": ("pair_id,variant,expected_ready,channel,score\np1,formal,true,chat,0.9\n"
                                "p1,formal,true,chat,0.7\np1,casual,true,chat,0.8\n"),
    "pairs/missing_variant.csv": ("pair_id,variant,expected_ready,channel,score\np1,formal,true,chat,0.9\n"
                                  "p1,casual,true,chat,0.8\np2,formal,false,chat,0.3\n"),
    "pairs/variants_disagree.csv": ("pair_id,variant,expected_ready,channel,score\np1,formal,true,chat,0.9\n"
                                    "p1,casual,false,chat,0.8\n"),
    "pairs/latin1.csv": ("pair_id,variant,expected_ready,channel,score,note\np1,formal,true,chat,0.9,d\u00e9j\u00e0\n"
                         "p1,casual,true,chat,0.8,ok\n").encode("latin-1"),
    "pairs/empty.jsonl": "",
    "pairs/blank_line.jsonl": ('{"pair_id":"p1","variant":"formal","expected_ready":true,"channel":"chat","score":0.9}\n'
                               "\n"
                               '{"pair_id":"p1","variant":"casual","expected_ready":true,"channel":"chat","score":0.8}\n'),
    "pairs/line_is_array.jsonl": ('["p1","formal",true,"chat",0.9]\n'),
    "pairs/score_is_bool.jsonl": ('{"pair_id":"p1","variant":"formal","expected_ready":true,"channel":"chat","score":true}\n'
                                  '{"pair_id":"p1","variant":"casual","expected_ready":true,"channel":"chat","score":0.8}\n'),
    "pairs/score_nan_literal.jsonl": ('{"pair_id":"p1","variant":"formal","expected_ready":true,"channel":"chat","score":NaN}\n'
                                      '{"pair_id":"p1","variant":"casual","expected_ready":true,"channel":"chat","score":0.8}\n'),
    "pairs/pair_id_number.jsonl": ('{"pair_id":7,"variant":"formal","expected_ready":true,"channel":"chat","score":0.9}\n'
                                   '{"pair_id":7,"variant":"casual","expected_ready":true,"channel":"chat","score":0.8}\n'),
    "pairs/latin1.jsonl": ('{"pair_id":"p1","variant":"formal","expected_ready":true,"channel":"chat","score":0.9,"note":"d\u00e9j\u00e0"}\n'
                           '{"pair_id":"p1","variant":"casual","expected_ready":true,"channel":"chat","score":0.8}\n').encode("latin-1"),
    # ---- Auto-QA rubric (the prompt file a user may supply)
    "rubric/empty.yaml": "",
    "rubric/not_a_mapping.yaml": "- id: q1\n",
    "rubric/bad_yaml.yaml": "questions: [\n  - id: q1\n",
    "rubric/questions_is_string.yaml": "questions: q1\n",
    "rubric/missing_text.yaml": "questions:\n  - id: q1\n    category: cx\n    type: objective\n    criteria: [a]\n",
    "rubric/text_is_number.yaml": ("questions:\n  - id: q1\n    category: cx\n    type: objective\n    text: 12\n"
                                   "    criteria: [a]\n"),
    "rubric/criteria_is_string.yaml": ("questions:\n  - id: q1\n    category: cx\n    type: objective\n"
                                       "    text: Was the issue resolved?\n    criteria: resolved on the call\n"),
    "rubric/unknown_type.yaml": ("questions:\n  - id: q1\n    category: cx\n    type: vibes\n"
                                 "    text: Was the issue resolved?\n    criteria: [a]\n"),
    "rubric/duplicate_ids.yaml": ("questions:\n"
                                  "  - {id: q1, category: cx, type: objective, text: First, criteria: [a]}\n"
                                  "  - {id: q1, category: cx, type: objective, text: Second, criteria: [b]}\n"),
    "rubric/latin1.yaml": ("questions:\n  - {id: q1, category: cx, type: objective, text: \"R\u00e9solu?\", "
                           "criteria: [a]}\n").encode("latin-1"),
    # ---- ShopFlow release contract (thresholds)
    "contract/empty.yaml": "",
    "contract/gap_above_one.yaml": ("primary_metric: equal_opportunity\nmax_tpr_gap: 1.5\nmax_fpr_gap: 0.1\n"
                                    "min_positive_per_slice: 50\nmin_negative_per_slice: 30\n"),
    "contract/gap_negative.yaml": ("primary_metric: equal_opportunity\nmax_tpr_gap: 0.1\nmax_fpr_gap: -0.1\n"
                                   "min_positive_per_slice: 50\nmin_negative_per_slice: 30\n"),
    "contract/gap_nan.yaml": ("primary_metric: equal_opportunity\nmax_tpr_gap: .nan\nmax_fpr_gap: 0.1\n"
                              "min_positive_per_slice: 50\nmin_negative_per_slice: 30\n"),
    "contract/gap_is_text.yaml": ("primary_metric: equal_opportunity\nmax_tpr_gap: ten percent\nmax_fpr_gap: 0.1\n"
                                  "min_positive_per_slice: 50\nmin_negative_per_slice: 30\n"),
    "contract/support_negative.yaml": ("primary_metric: equal_opportunity\nmax_tpr_gap: 0.1\nmax_fpr_gap: 0.1\n"
                                       "min_positive_per_slice: -5\nmin_negative_per_slice: 30\n"),
    "contract/unknown_key.yaml": ("primary_metric: equal_opportunity\nmax_tpr_gap: 0.1\nmax_fpr_gap: 0.1\n"
                                  "min_positive_per_slice: 50\nmin_negative_per_slice: 30\nmax_gap: 0.2\n"),
    "contract/bad_yaml.yaml": "primary_metric: [equal_opportunity\n",
    "contract/latin1.yaml": ("primary_metric: \u00e9quit\u00e9\nmax_tpr_gap: 0.1\nmax_fpr_gap: 0.1\n"
                             "min_positive_per_slice: 50\nmin_negative_per_slice: 30\n").encode("latin-1"),
    # ---- study configs (configs/<study>/<config>.yaml)
    "configs/empty.yaml": "",
    "configs/top_level_list.yaml": "- judge: scripted:yes\n",
    "configs/bad_yaml.yaml": "judge: [scripted:yes\n",
    "configs/api_key_parameter.yaml": "judge: openai:gpt-4o-mini\nopenai_api_key: sk-not-a-real-key\n",
    "configs/latin1.yaml": "judge: scripted:yes\nprompt: r\u00e9sum\u00e9\n".encode("latin-1"),
    "configs/non_string_key.yaml": "judge: scripted:yes\n3: three\n",
    "configs/unknown_parameter.yaml": "judge: scripted:yes\njugde_threshold: 0.5\n",
    "configs/wrong_type.yaml": "judge: scripted:yes\nn_boot: many\n",
    "configs/threshold_above_one.yaml": "judge: scripted:yes\njudged_threshold: 1.5\n",
}


def main() -> None:
    for rel, content in FILES.items():
        path = HERE / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    print(f"wrote {len(FILES)} files under {HERE}")


if __name__ == "__main__":
    main()
