//! The finish step on an engine of two labels: what it sends, learns and holds.

use super::*;
use crate::engine::keywords::KeywordMode;
use crate::engine::EngineConfig;
use crate::events::{InputPosition, Prediction};
use crate::serve::pipeline::begin;
use crate::telemetry::metrics::Metrics;

fn engine() -> Engine {
    crate::serve::pipeline::one_round_engine(
        EngineConfig::default(),
        &[
            ("billing", "invoice charged twice refund payment card"),
            ("shipping", "parcel courier delivery late tracking box"),
        ],
    )
}

fn text(engine: &Engine, payload: &str) -> Text {
    let stats = Stats::new(std::sync::Arc::new(Metrics::new()));
    let classifier = TextSteps::new(None, KeywordMode::Tfidf);
    let span = tracing::Span::none();
    let decoded = crate::events::decode::text_event(
        payload.as_bytes(),
        &crate::bounds::Bounds::with_text_bytes(10_000),
    );
    let work = begin(&classifier, engine, &stats, &span, decoded, 0.0);
    Text {
        span,
        source: ReadText {
            position: InputPosition {
                topic: "texts".into(),
                partition: 2,
                offset: 41,
            },
            key: Some(b"k".to_vec()),
            payload: payload.as_bytes().to_vec(),
        },
        received: Instant::now(),
        work,
    }
}

fn finishing(topics: &TopicsSection, online_indexing: bool) -> Finishing<'_> {
    Finishing {
        topics,
        on_llm_failure: OnLlmFailure::Graph,
        online_indexing,
        discovery: None,
        holding: None,
        model: None,
        record_limit: RecordLimit::DEFAULT,
    }
}

fn prediction(finished: &Finished) -> Prediction {
    let (kind, record) = finished.records.last().unwrap();
    assert_eq!(*kind, OutputKind::Prediction);
    serde_json::from_slice(&record.payload).unwrap()
}

#[test]
fn a_text_that_reads_like_an_open_proposal_is_held_for_review_and_pooled() {
    use crate::discovery::{Holding, Meaning, OpenProposal, PooledText, Unexplained};
    let engine = engine();
    let topics = TopicsSection::default();
    let discovery = DiscoveryConfig::default();
    // A proposal of four members along x; the two labels' examples along y and z.
    let members: Vec<PooledText> = (0..4)
        .map(|i| PooledText {
            id: format!("m{i}"),
            terms: Default::default(),
            keywords: Vec::new(),
            excerpt: String::new(),
            why: Unexplained::NoMatch,
            label: String::new(),
            arrival_score: None,
        })
        .collect();
    let refs: Vec<&PooledText> = members.iter().collect();
    let meaning = Meaning {
        vectors: (0..4)
            .map(|i| Some(vec![1.0, 0.05 * i as f32, 0.0]))
            .collect(),
        centre: Some(vec![0.0; 3]),
        labels: vec![(0, vec![0.0, 1.0, 0.0]), (1, vec![0.0, 0.0, 1.0])],
    };
    let ids: Vec<String> = members.iter().map(|m| m.id.clone()).collect();
    let open = OpenProposal {
        id: "p-1",
        name: "new theme",
        members: &ids,
    };
    let holding = Holding::build([open], &refs, &meaning);
    // A text the words decide into shipping, whose meaning reads like the proposal.
    let payload = r#"{"id":"t1","text":"my parcel delivery is late, where is the courier"}"#;
    let with_vector = |vector: Vec<f32>| {
        let mut text = text(&engine, payload);
        if let Work::Classify { pending, .. } = &mut text.work {
            pending.prepared.analysis.embedding = Some(vector);
        }
        text
    };
    let holding_finishing = Finishing {
        discovery: Some(&discovery),
        holding: Some(&holding),
        ..finishing(&topics, true)
    };
    // Read like shipping's material instead: decided as ever.
    let plain = finish(
        &holding_finishing,
        &engine,
        with_vector(vec![0.0, 1.0, 0.1]),
        Learning::Allowed,
    );
    let predicted = prediction(&plain);
    assert_eq!(predicted.status, PredictionStatus::Decided, "{predicted:?}");
    assert_eq!(predicted.proposal, None);
    assert_eq!(
        plain.learn.as_ref().map(|l| l.label.as_str()),
        Some("shipping")
    );

    let held = finish(
        &holding_finishing,
        &engine,
        with_vector(vec![1.0, 0.02, 0.0]),
        Learning::Allowed,
    );
    let predicted = prediction(&held);
    assert_eq!(predicted.status, PredictionStatus::NeedsReview);
    assert_eq!(
        predicted.label.as_deref(),
        Some("shipping"),
        "the best guess stays"
    );
    assert_eq!(
        predicted.proposal.as_ref().map(|p| p.id.as_str()),
        Some("p-1")
    );
    let learn = held.learn.as_ref().expect("a learn step");
    assert_eq!(
        learn.label,
        crate::engine::NO_LABEL,
        "no known label learns it"
    );
    assert!(!learn.confident);
    assert!(learn.note.is_some(), "pooled, so the proposal grows by it");
    assert!(held.tally.held_for_proposal, "counted");
    assert!(!plain.tally.held_for_proposal);
    // Discovery off: no holding, whatever the service last read.
    let off = Finishing {
        discovery: None,
        ..holding_finishing
    };
    let decided = finish(
        &off,
        &engine,
        with_vector(vec![1.0, 0.02, 0.0]),
        Learning::Allowed,
    );
    assert_eq!(prediction(&decided).status, PredictionStatus::Decided);
}

#[test]
fn a_text_is_predicted_and_learned_with_its_position() {
    let engine = engine();
    let topics = TopicsSection::default();
    let payload = r#"{"id":"t1","text":"my parcel delivery is late, where is the courier"}"#;
    let finished = finish(
        &finishing(&topics, true),
        &engine,
        text(&engine, payload),
        Learning::Allowed,
    );
    let predicted = prediction(&finished);
    assert_eq!(predicted.label.as_deref(), Some("shipping"));
    assert_eq!((predicted.input.partition, predicted.input.offset), (2, 41));
    assert_eq!(finished.records[0].1.topic, topics.predictions);
    let learn = finished.learn.as_ref().expect("a learn step");
    assert_eq!(learn.position, Position::new(2, 41));
    assert_eq!(learn.label, "shipping");
    assert_eq!(learn.confident, predicted.confident);
    assert_eq!(
        finished
            .tally
            .predicted
            .as_ref()
            .map(|(source, _)| source.as_str()),
        Some("graph")
    );
    assert!(
        finished.source.is_some(),
        "kept to dead-letter a refused output"
    );
}

#[test]
fn nothing_is_learned_twice_or_for_a_revoked_partition_or_without_online_indexing() {
    let engine = engine();
    let topics = TopicsSection::default();
    let payload = r#"{"id":"t2","text":"refund my card, the invoice charged twice"}"#;
    for (learning, online, skipped) in [
        (Learning::AlreadyLearned, true, true),
        (Learning::Revoked, true, true),
        (Learning::Allowed, false, false),
    ] {
        let finished = finish(
            &finishing(&topics, online),
            &engine,
            text(&engine, payload),
            learning,
        );
        assert!(finished.learn.is_none(), "{learning:?}");
        assert_eq!(finished.tally.relearn_skipped, skipped, "{learning:?}");
        assert_eq!(prediction(&finished).label.as_deref(), Some("billing"));
    }
}

#[test]
fn a_bad_record_becomes_one_dead_letter_with_its_reason() {
    let engine = engine();
    let topics = TopicsSection::default();
    let finished = finish(
        &finishing(&topics, true),
        &engine,
        text(&engine, "{not json"),
        Learning::Allowed,
    );
    assert!(finished.learn.is_none());
    assert!(finished.source.is_none());
    assert_eq!(finished.records.len(), 1);
    let (kind, record) = &finished.records[0];
    assert_eq!(*kind, OutputKind::DeadLetter);
    assert_eq!(record.topic, topics.dead_letter);
    assert_eq!(record.payload, b"{not json");
    assert_eq!(finished.tally.dead_letter, Some(Reason::MalformedJson));
}

#[test]
fn an_llm_failure_falls_back_to_the_graph_or_goes_to_the_dead_letters() {
    let engine = engine();
    let topics = TopicsSection::default();
    let payload = r#"{"id":"t3","text":"courier lost the box during delivery"}"#;
    let failed = |engine: &Engine| {
        let mut text = text(engine, payload);
        if let Work::Classify { answer, .. } = &mut text.work {
            *answer = Some(Answer {
                failure: Some(LlmFailure {
                    reason: "timeout".into(),
                    detail: "60 s".into(),
                }),
                ..Answer::default()
            });
        }
        text
    };
    let fallback = finish(
        &finishing(&topics, true),
        &engine,
        failed(&engine),
        Learning::Allowed,
    );
    assert!(fallback.tally.llm_fallback);
    let predicted = prediction(&fallback);
    assert_eq!(predicted.label.as_deref(), Some("shipping"));
    assert_eq!(predicted.llm_error.as_deref(), Some("timeout: 60 s"));

    let strict = Finishing {
        on_llm_failure: OnLlmFailure::DeadLetter,
        ..finishing(&topics, true)
    };
    let dead = finish(&strict, &engine, failed(&engine), Learning::Allowed);
    assert_eq!(dead.tally.dead_letter, Some(Reason::LlmFailed));
    assert!(dead.learn.is_none());
    let header = dead.records[0]
        .1
        .headers
        .iter()
        .find(|(name, _)| name == "gorag.reason")
        .map(|(_, value)| value.as_str());
    assert_eq!(header, Some("llm_failed"));
}
