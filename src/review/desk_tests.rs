//! The desk's state on events as its topics give them.

use super::answer::{Answer, DeskError, Publish};
use super::desk::{Desk, DeskSettings, Input, ItemView};
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
            proposal: None,
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
        closest_label: None,
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

/// A needs-review prediction for `id` held for the open proposal `p-1`.
fn held_prediction(id: &str) -> Input {
    let Input::Prediction(mut prediction) = prediction(id, "needs_review", Some("billing")) else {
        unreachable!()
    };
    prediction.version = 4;
    prediction.proposal = Some(crate::events::ProposalCandidate {
        id: "p-1".into(),
        name: "erase".into(),
        similarity: 0.7,
    });
    Input::Prediction(prediction)
}

/// A desk with open proposal `p-1` and text `t1` held for it.
fn desk_with_a_held_text() -> Desk {
    let mut desk = desk(0.0);
    desk.read(proposal(ProposalStatus::Open, 1), 1);
    desk.read(text("t1"), 2);
    desk.read(held_prediction("t1"), 3);
    desk
}

#[test]
fn a_text_held_for_an_open_proposal_is_placed_in_it_and_becomes_its_example_when_accepted() {
    let mut desk = desk_with_a_held_text();
    let reviewer = ann();
    // The proposal came first: skip it to reach the text.
    desk.skip(&reviewer, &ItemKey::Proposal("p-1".into()));
    match desk.next_for(&reviewer, 4) {
        Some(ItemView::Text { proposal, .. }) => {
            let shown = proposal.expect("the proposal is offered");
            // Under the name the proposals topic gave it last.
            assert_eq!(
                (shown.id.as_str(), shown.name.as_str()),
                ("p-1", "privacy erase")
            );
        }
        other => panic!("{other:?}"),
    }
    let key = ItemKey::Text("t1".into());
    let (_, publish) = desk
        .answer(&reviewer, &key, Answer::Proposal("p-1".into()), 5)
        .unwrap();
    let [Publish::Label { event, .. }] = &publish[..] else {
        panic!("{publish:?}")
    };
    match event {
        LabelEvent::Correct {
            version,
            label: None,
            none_of_these: true,
            proposal: Some(proposal),
            ..
        } => assert_eq!((*version, proposal.as_str()), (4, "p-1")),
        other => panic!("{other:?}"),
    }
    // Read back from the labels topic, it counts for the class: the accepted label's first
    // example.
    desk.read(Input::Label(event.clone()), 6);
    let bob = Reviewer("bob".into());
    assert_eq!(shown_id(desk.next_for(&bob, 7)).as_deref(), Some("p-1"));
    let (_, publish) = desk
        .answer(
            &bob,
            &ItemKey::Proposal("p-1".into()),
            Answer::Accept {
                label: "privacy".into(),
                name: None,
                description: None,
            },
            7,
        )
        .unwrap();
    match &publish[0] {
        Publish::Label {
            event: LabelEvent::Round { labels, .. },
            ..
        } => assert_eq!(
            labels[0].examples,
            ["the text of t1", "Please erase my data."]
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_text_is_not_placed_in_a_proposal_that_is_no_longer_open() {
    let mut desk = desk_with_a_held_text();
    desk.read(proposal(ProposalStatus::Rejected, 2), 4);
    match desk.next_for(&ann(), 5) {
        Some(ItemView::Text { proposal, .. }) => assert!(proposal.is_none()),
        other => panic!("{other:?}"),
    }
    let refused = desk.answer(
        &ann(),
        &ItemKey::Text("t1".into()),
        Answer::Proposal("p-1".into()),
        6,
    );
    assert!(matches!(refused, Err(DeskError::NotOpen(_))), "{refused:?}");
}

#[test]
fn a_later_prediction_of_a_queued_text_replaces_the_one_shown() {
    let mut desk = desk(0.0);
    desk.read(proposal(ProposalStatus::Open, 1), 1);
    desk.read(text("t1"), 2);
    desk.read(prediction("t1", "needs_review", Some("billing")), 3);
    // Held for p-1 since: the item offers the proposal, with its text.
    desk.read(held_prediction("t1"), 4);
    desk.skip(&ann(), &ItemKey::Proposal("p-1".into()));
    match desk.next_for(&ann(), 5) {
        Some(ItemView::Text { text, proposal, .. }) => {
            assert_eq!(text, "the text of t1");
            assert!(proposal.is_some());
        }
        other => panic!("{other:?}"),
    }
    // Decided at last: it needs no review any more.
    desk.read(prediction("t1", "decided", Some("billing")), 6);
    assert_eq!(desk.gauges(7).depth, 1, "only the proposal waits");
}
