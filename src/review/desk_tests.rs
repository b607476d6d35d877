//! The desk's state on events as its topics give them.

use super::desk::{Answer, Desk, DeskError, DeskSettings, Input, ItemView, Publish};
use super::queue::{ItemKey, Reviewer};
use crate::events::proposal::{ProposalEvent, ProposalStatus, Representative};
use crate::events::{LabelEvent, LabelSpec, Prediction, TextEvent};

fn desk(audit_share: f64) -> Desk {
    let mut desk = Desk::new(DeskSettings {
        audit_share,
        max_items: 100,
        claim_ms: 60_000,
        max_text_bytes: 1 << 20,
        bounds: crate::bounds::Bounds::default(),
    });
    let spec = |id: &str| LabelSpec {
        id: id.into(),
        name: Some(format!("{id} name")),
        description: None,
        examples: vec!["x".into()],
    };
    desk.read(
        Input::Label(LabelEvent::Round {
            version: 1,
            round: "r1".into(),
            labels: vec![spec("billing"), spec("shipping")],
        }),
        0,
    );
    desk
}

fn prediction(id: &str, status: &str, label: Option<&str>) -> Input {
    let value = serde_json::json!({
        "version": 3, "text_id": id, "label": label, "source": "graph",
        "candidates": ["billing", "shipping"], "candidate_scores": [0.5, 0.4],
        "basis": "ranked_scores", "confidence": 0.45, "status": status, "keywords": [],
        "hallucination": false, "label_version": 1, "latency": {
            "decode_ms": 0.0, "keywords_ms": 0.0, "retrieve_ms": 0.0, "llm_ms": 0.0,
            "index_ms": 0.0, "total_ms": 0.0
        },
        "input": {"topic": "texts", "partition": 0, "offset": 1}
    });
    let prediction: Prediction = serde_json::from_value(value).unwrap();
    Input::Prediction(Box::new(prediction))
}

fn text(id: &str) -> Input {
    Input::Text(TextEvent {
        version: 1,
        id: id.into(),
        text: format!("the text of {id}"),
        metadata: None,
        gold_label: None,
    })
}

fn ann() -> Reviewer {
    Reviewer("ann".into())
}

fn shown_id(view: Option<ItemView>) -> Option<String> {
    match view? {
        ItemView::Text { text_id, .. } => Some(text_id),
        ItemView::Proposal { proposal, .. } => Some(proposal),
    }
}

#[test]
fn a_prediction_to_review_is_shown_with_its_text_in_either_order() {
    let mut desk = desk(0.0);
    desk.read(text("t1"), 1);
    desk.read(prediction("t1", "needs_review", Some("billing")), 2);
    desk.read(prediction("t2", "no_match", None), 3);
    desk.read(prediction("t3", "decided", Some("billing")), 4);
    assert_eq!(
        desk.gauges(10).depth,
        1,
        "t2 waits for its text, t3 is decided"
    );
    desk.read(text("t2"), 5);
    desk.read(text("t3"), 6);
    assert_eq!(desk.gauges(10).depth, 2);
    match desk.next_for(&ann(), 10) {
        Some(ItemView::Text {
            text_id,
            text,
            candidates,
            audit,
            ..
        }) => {
            assert_eq!(text_id, "t1");
            assert_eq!(text, "the text of t1");
            assert_eq!(candidates[0].label.name.as_deref(), Some("billing name"));
            assert!(!audit);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_share_of_decided_predictions_are_audits_and_their_answers_say_so() {
    let mut desk = desk(1.0);
    desk.read(text("t1"), 1);
    desk.read(prediction("t1", "decided", Some("billing")), 2);
    let key = ItemKey::Text("t1".into());
    assert!(matches!(
        desk.next_for(&ann(), 10),
        Some(ItemView::Text { audit: true, .. })
    ));
    let answer = Answer::Label("shipping".into());
    let (item, publish) = desk.answer(&ann(), &key, answer.clone(), 11).unwrap();
    // Counted once the broker has it.
    assert_eq!(desk.tally().texts_answered(), 0);
    desk.published(&item, &answer);
    match &publish[..] {
        [Publish::Label {
            key,
            event:
                LabelEvent::Correct {
                    version,
                    label,
                    audit,
                    reviewer,
                    text,
                    ..
                },
        }] => {
            assert_eq!(key, "t1");
            assert_eq!(*version, 3);
            assert_eq!(label.as_deref(), Some("shipping"));
            assert!(*audit);
            assert_eq!(reviewer.as_deref(), Some("ann"));
            assert_eq!(text, "the text of t1");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(desk.tally().audit.iter().map(|a| a.answers).sum::<u64>(), 1);
    assert_eq!(desk.tally().audit.iter().map(|a| a.agreed).sum::<u64>(), 0);
}

#[test]
fn an_answer_read_back_from_the_labels_topic_is_never_offered_again() {
    let mut desk = desk(0.0);
    // A restart reads the correction before the prediction it answers (other topic).
    desk.read(
        Input::Label(LabelEvent::Correct {
            version: 1,
            text_id: "t1".into(),
            label: Some("billing".into()),
            none_of_these: false,
            text: "x".into(),
            audit: false,
            reviewer: None,
        }),
        1,
    );
    desk.read(text("t1"), 2);
    desk.read(prediction("t1", "needs_review", Some("billing")), 3);
    assert_eq!(desk.gauges(10).depth, 0);
    assert!(desk.next_for(&ann(), 10).is_none());
}

#[test]
fn a_label_that_is_not_active_is_refused_and_the_item_stays() {
    let mut desk = desk(0.0);
    desk.read(text("t1"), 1);
    desk.read(prediction("t1", "needs_review", Some("billing")), 2);
    desk.read(
        Input::Label(LabelEvent::RetireLabel {
            version: 1,
            label: "shipping".into(),
        }),
        3,
    );
    let key = ItemKey::Text("t1".into());
    assert_eq!(shown_id(desk.next_for(&ann(), 10)).as_deref(), Some("t1"));
    for label in ["shipping", "nonsense"] {
        let refused = desk.answer(&ann(), &key, Answer::Label(label.into()), 11);
        assert!(
            matches!(refused, Err(DeskError::UnknownLabel(_))),
            "{refused:?}"
        );
    }
    assert_eq!(desk.gauges(12).depth, 1);
    // A retired candidate is not offered.
    match desk.next_for(&ann(), 12) {
        Some(ItemView::Text { candidates, .. }) => {
            let ids: Vec<_> = candidates.iter().map(|c| c.label.id.as_str()).collect();
            assert_eq!(ids, ["billing"]);
        }
        other => panic!("{other:?}"),
    }
    let (_, publish) = desk.answer(&ann(), &key, Answer::NoneOfThese, 13).unwrap();
    assert!(matches!(
        &publish[..],
        [Publish::Label {
            event: LabelEvent::Correct {
                none_of_these: true,
                label: None,
                ..
            },
            ..
        }]
    ));
}

fn proposal(status: ProposalStatus, revision: u64) -> Input {
    Input::Proposal(Box::new(ProposalEvent {
        version: 1,
        proposal: "p-1".into(),
        revision,
        status,
        name: "privacy erase".into(),
        description: None,
        keywords: vec!["erase".into()],
        representatives: vec![Representative {
            text_id: "t9".into(),
            excerpt: "Please erase my data.".into(),
        }],
        size: 6,
        members: vec![],
        growth: 6,
        cohesion: 0.5,
        label: None,
    }))
}

#[test]
fn an_accepted_proposal_publishes_its_round_then_its_decision() {
    let mut desk = desk(0.0);
    desk.read(proposal(ProposalStatus::Open, 1), 1);
    desk.read(proposal(ProposalStatus::Open, 2), 2);
    assert_eq!(
        desk.gauges(3).depth,
        1,
        "a later revision replaces the item"
    );
    let key = ItemKey::Proposal("p-1".into());
    assert_eq!(shown_id(desk.next_for(&ann(), 5)).as_deref(), Some("p-1"));
    let taken = desk.answer(
        &ann(),
        &key,
        Answer::Accept {
            label: "billing".into(),
            name: None,
            description: None,
        },
        6,
    );
    assert!(matches!(taken, Err(DeskError::LabelExists(_))), "{taken:?}");
    let (_, publish) = desk
        .answer(
            &ann(),
            &key,
            Answer::Accept {
                label: "privacy".into(),
                name: Some("Data privacy".into()),
                description: Some("Requests about personal data".into()),
            },
            7,
        )
        .unwrap();
    match &publish[..] {
        [Publish::Label {
            key,
            event: LabelEvent::Round { labels, .. },
        }, Publish::Proposal(decided)] => {
            assert_eq!(key, "accept-p-1");
            assert_eq!(labels[0].id, "privacy");
            assert_eq!(labels[0].name.as_deref(), Some("Data privacy"));
            assert_eq!(labels[0].examples, ["Please erase my data."]);
            assert_eq!(decided.status, ProposalStatus::Accepted);
            assert_eq!(decided.revision, 3);
        }
        other => panic!("{other:?}"),
    }
    // Read back from the topic: decided, not queued again.
    desk.read(proposal(ProposalStatus::Accepted, 3), 8);
    desk.read(proposal(ProposalStatus::Open, 2), 9);
    assert_eq!(desk.gauges(10).depth, 0);
}
