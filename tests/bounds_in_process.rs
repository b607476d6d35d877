//! The bounds on every input (docs/guide/bounds.md), through the whole service loop on the
//! in-memory broker: each input past a bound gets its dead letter naming the bound, the events
//! and texts behind it in the same partition are still applied and predicted, nothing is lost;
//! and a dead letter always fits the broker — cut to the producer's record limit, sent without
//! its value when its topic takes less. The same against the real broker:
//! `tests/oversized_labels.rs`.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use gorag::bounds::{keys, ERROR_TEXT_BYTES};
use gorag::broker::{MemoryBroker, Outgoing, Record, RecordLimit, Transport};
use gorag::config::{Layers, ServeConfig, TopicsSection};
use gorag::events::Prediction;
use gorag::serve::{serve_on, ServeSummary};
use support::example;
use tokio::sync::oneshot;

fn config(state: &Path, extra: &[&str]) -> ServeConfig {
    let mut sets = vec![
        format!("state.dir={}", state.display()),
        "kafka.group_id=bounds".into(),
        "kafka.partitions=1".into(),
        "kafka.commit_interval_ms=200".into(),
        "admin.listen=127.0.0.1:0".into(),
        "llm.url=none".into(),
        "engine.embedding_model=none".into(),
        "discovery.enabled=false".into(),
    ];
    sets.extend(extra.iter().map(|s| s.to_string()));
    ServeConfig::load(&Layers {
        file: None,
        env: Vec::new(),
        sets,
    })
    .expect("a valid configuration")
}

/// Publish `lines` in order, keyed by their `id` (or `round`) when they have one.
fn publish(broker: &MemoryBroker, topic: &str, lines: &[String]) {
    for line in lines {
        let value: Option<serde_json::Value> = serde_json::from_str(line).ok();
        let key = value
            .as_ref()
            .and_then(|v| v.get("id").or_else(|| v.get("round")))
            .and_then(|k| k.as_str())
            .map(|k| k.as_bytes().to_vec());
        broker
            .append(&Outgoing {
                topic: topic.to_string(),
                key,
                payload: line.as_bytes().to_vec(),
                headers: Vec::new(),
            })
            .expect("the input fits the broker");
    }
}

/// Serve until `done` holds (or 60 s pass), then stop: the summary.
async fn serve_until(
    broker: &MemoryBroker,
    config: ServeConfig,
    mut done: impl FnMut() -> bool,
) -> ServeSummary {
    let (stop, stopped) = oneshot::channel::<()>();
    let service = serve_on(Transport::Memory(broker.clone()), config, async move {
        let _ = stopped.await;
    });
    let watch = async move {
        let started = Instant::now();
        while !done() && started.elapsed() < Duration::from_secs(60) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let _ = stop.send(());
    };
    let (summary, ()) = tokio::join!(service, watch);
    summary.expect("the service stopped cleanly")
}

fn predicted(broker: &MemoryBroker, topics: &TopicsSection) -> BTreeMap<String, Prediction> {
    broker
        .records(&topics.predictions)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|r| serde_json::from_slice::<Prediction>(&r.payload).ok())
        .map(|p| (p.text_id.clone(), p))
        .collect()
}

fn dead_letters(broker: &MemoryBroker, topics: &TopicsSection) -> Vec<Record> {
    broker.records(&topics.dead_letter).unwrap_or_default()
}

fn header<'a>(record: &'a Record, name: &str) -> &'a str {
    record
        .headers
        .iter()
        .find(|(n, _)| n == name)
        .map_or("", |(_, v)| v.as_str())
}

/// The dead letter of the record at `offset` of `topic` (exactly one).
fn letter_of<'a>(letters: &'a [Record], topic: &str, offset: i64) -> &'a Record {
    let found: Vec<&Record> = letters
        .iter()
        .filter(|l| {
            header(l, "__connect.errors.topic") == topic
                && header(l, "__connect.errors.offset") == offset.to_string()
        })
        .collect();
    assert_eq!(
        found.len(),
        1,
        "dead letters of {topic}@{offset}: {found:?}"
    );
    found[0]
}

fn round(id: &str, labels: serde_json::Value) -> String {
    serde_json::json!({"type": "round", "round": id, "labels": labels}).to_string()
}

fn label(id: &str) -> serde_json::Value {
    serde_json::json!({"id": id, "examples": [format!("an example about {id} things")]})
}

fn text(id: &str, text: &str) -> String {
    serde_json::json!({"id": id, "text": text}).to_string()
}

/// Every bound on label events and texts: the events and texts behind each bad one are applied
/// and predicted, each bad one has one dead letter naming its bound, and nothing is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_input_past_a_bound_is_dead_lettered_and_what_follows_goes_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = config(
        dir.path(),
        &[
            "labels.max_id_bytes=32",
            "labels.max_name_bytes=32",
            "labels.max_description_bytes=200",
            "labels.max_examples=3",
            "labels.max_per_round=4",
            "labels.max_active=6",
            "input.max_text_bytes=2000",
            "input.max_id_bytes=64",
        ],
    );
    let topics = config.topics.clone();
    let broker = MemoryBroker::new();
    broker.ensure_topics(&config.broker());
    let long = |n: usize| "z".repeat(n);
    let mut named = label("named");
    named["name"] = long(33).into();
    let mut described = label("described");
    described["description"] = long(201).into();
    let mut many = label("many");
    many["examples"] = serde_json::json!(["one", "two", "three", "four"]);
    let mut long_example = label("long_example");
    long_example["examples"] = serde_json::json!([long(2001)]);
    let labels_ahead: Vec<serde_json::Value> = (0..4).map(|i| label(&format!("l{i}"))).collect();
    let five: Vec<serde_json::Value> = (0..5).map(|i| label(&format!("f{i}"))).collect();
    let add = |label: &str, examples: serde_json::Value| {
        serde_json::json!({"type": "add_examples", "label": label, "examples": examples})
            .to_string()
    };
    let correct = |text_id: &str, text: &str| {
        serde_json::json!({"type": "correct", "text_id": text_id, "label": "billing", "text": text})
            .to_string()
    };
    // (the event, the bound it passes: None for the events that are applied)
    let mut events: Vec<(String, Option<&str>)> = vec![(example("round-1.jsonl")[0].clone(), None)];
    events.extend([
        (
            round("b1", serde_json::json!([label(&long(33))])),
            Some(keys::LABEL_ID_BYTES),
        ),
        (
            round(&long(33), serde_json::json!([label("x")])),
            Some(keys::LABEL_ID_BYTES),
        ),
        (
            round("b3", serde_json::json!([named])),
            Some(keys::NAME_BYTES),
        ),
        (
            round("b4", serde_json::json!([described])),
            Some(keys::DESCRIPTION_BYTES),
        ),
        (
            round("b5", serde_json::json!([many])),
            Some(keys::EXAMPLES_PER_LABEL),
        ),
        (
            round("b6", serde_json::json!([long_example])),
            Some(keys::TEXT_BYTES),
        ),
        (
            round("b7", serde_json::json!(five)),
            Some(keys::LABELS_PER_ROUND),
        ),
        // Three active, four more: seven, past six.
        (
            round("b8", serde_json::json!(labels_ahead)),
            Some(keys::ACTIVE_LABELS),
        ),
        (
            add("billing", serde_json::json!(["a", "b", "c", "d"])),
            Some(keys::EXAMPLES_PER_LABEL),
        ),
        (
            add(&long(33), serde_json::json!(["a"])),
            Some(keys::LABEL_ID_BYTES),
        ),
        (
            serde_json::json!({"type": "retire_label", "label": long(33)}).to_string(),
            Some(keys::LABEL_ID_BYTES),
        ),
        (
            correct(&long(65), "I was charged twice"),
            Some(keys::TEXT_ID_BYTES),
        ),
        (correct("t-9", &long(2001)), Some(keys::TEXT_BYTES)),
        (example("round-2.jsonl")[0].clone(), None),
        (
            add(
                "billing",
                serde_json::json!(["refund the duplicate charge"]),
            ),
            None,
        ),
    ]);
    let lines: Vec<String> = events.iter().map(|(line, _)| line.clone()).collect();
    publish(&broker, &topics.labels, &lines);

    let mut gold = text("gold", "my parcel never arrived");
    gold = gold.replace('}', &format!(r#","gold_label":"{}"}}"#, long(33)));
    let texts: Vec<(String, Option<&str>)> = vec![
        (
            text(&long(65), "my parcel never arrived"),
            Some(keys::TEXT_ID_BYTES),
        ),
        (
            text("g1", "the courier lost my parcel, tracking shows nothing"),
            None,
        ),
        (gold, Some(keys::LABEL_ID_BYTES)),
        (
            text("g2", "I was charged twice on my card for one invoice"),
            None,
        ),
        (text("too-long", &long(2001)), Some(keys::TEXT_BYTES)),
        (
            text(
                "g3",
                "the blender motor burned out after two days, smells of smoke",
            ),
            None,
        ),
    ];
    let lines: Vec<String> = texts.iter().map(|(line, _)| line.clone()).collect();
    publish(&broker, &topics.texts, &lines);

    let bad = events
        .iter()
        .chain(&texts)
        .filter(|(_, b)| b.is_some())
        .count();
    let summary = serve_until(&broker, config, || {
        predicted(&broker, &topics).len() >= 3 && dead_letters(&broker, &topics).len() >= bad
    })
    .await;

    let letters = dead_letters(&broker, &topics);
    assert_eq!(
        letters.len(),
        bad,
        "one dead letter per bad input: {letters:#?}"
    );
    for (inputs, topic) in [(&events, &topics.labels), (&texts, &topics.texts)] {
        for (offset, (_, bound)) in inputs.iter().enumerate() {
            let Some(key) = bound else { continue };
            let letter = letter_of(&letters, topic, offset as i64);
            let message = header(letter, "__connect.errors.exception.message");
            let reason = header(letter, "gorag.reason");
            let expected = if topic == &topics.texts && *key == keys::TEXT_BYTES {
                "oversized_text"
            } else {
                "over_limit"
            };
            assert_eq!(reason, expected, "{topic}@{offset}: {message}");
            assert!(
                message.contains(key),
                "{topic}@{offset} names {key}: {message}"
            );
            assert!(message.len() <= 300, "{topic}@{offset}: {message}");
        }
    }
    // The texts behind each bad one are predicted; the rounds and the examples behind the bad
    // events are applied (round 2's label is a candidate for the text after it).
    let predictions = predicted(&broker, &topics);
    let ids: Vec<&str> = predictions.keys().map(String::as_str).collect();
    assert_eq!(ids, ["g1", "g2", "g3"]);
    assert!(
        predictions["g3"]
            .candidates
            .iter()
            .any(|c| c == "product_defect"),
        "{:?}",
        predictions["g3"].candidates
    );
    assert_eq!(summary.labels, 5, "{summary:?}");
    assert_eq!(summary.label_events as usize, events.len(), "{summary:?}");
    // Nothing lost: every text is predicted or dead-lettered, and committed.
    assert_eq!(summary.texts_in as usize, texts.len(), "{summary:?}");
    assert_eq!(
        broker.committed("bounds").get(&0),
        Some(&(texts.len() as i64))
    );
}

/// A 700 kB record whose field of the wrong type serde_json's error quotes whole used to make a
/// dead letter of 1.2 MB (a 700 kB error header beside the value cut to 512 KiB) that the broker
/// refused: the record left nothing. Its error is now cut, its value kept whole; a record too
/// large to keep whole is cut to the producer's limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_bad_record_leaves_a_dead_letter_that_fits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = config(dir.path(), &[]);
    let topics = config.topics.clone();
    let broker = MemoryBroker::new();
    broker.ensure_topics(&config.broker());
    publish(&broker, &topics.labels, &example("round-1.jsonl"));
    let quoted = format!(
        r#"{{"id":"big","text":"my parcel","version":"{}"}}"#,
        "v".repeat(700_000)
    );
    let malformed = format!("{{\"id\":\"cut\",\"text\":\"{}", "w".repeat(1_040_000));
    let texts = [
        quoted.clone(),
        text("g1", "the courier lost my parcel, tracking shows nothing"),
        malformed.clone(),
        text("g2", "I was charged twice on my card for one invoice"),
    ];
    publish(&broker, &topics.texts, &texts);
    serve_until(&broker, config, || {
        predicted(&broker, &topics).len() >= 2 && dead_letters(&broker, &topics).len() >= 2
    })
    .await;

    let letters = dead_letters(&broker, &topics);
    assert_eq!(
        letters.len(),
        2,
        "{:?}",
        letters.iter().map(|l| &l.headers).collect::<Vec<_>>()
    );
    let quoted_letter = letter_of(&letters, &topics.texts, 0);
    assert_eq!(header(quoted_letter, "gorag.reason"), "invalid_event");
    let message = header(quoted_letter, "__connect.errors.exception.message");
    assert!(message.len() <= ERROR_TEXT_BYTES, "{} bytes", message.len());
    assert!(
        message.starts_with("invalid type: string \"vvv"),
        "{message}"
    );
    assert_eq!(
        quoted_letter.payload,
        quoted.as_bytes(),
        "kept whole: it fits"
    );
    assert_eq!(header(quoted_letter, "gorag.truncated_from"), "");

    let cut_letter = letter_of(&letters, &topics.texts, 2);
    assert_eq!(header(cut_letter, "gorag.reason"), "malformed_json");
    assert_eq!(
        header(cut_letter, "gorag.truncated_from"),
        malformed.len().to_string()
    );
    assert!(malformed.as_bytes().starts_with(&cut_letter.payload));
    let limit = RecordLimit::DEFAULT.bytes();
    let size = cut_letter.payload.len()
        + cut_letter.key.as_ref().map_or(0, Vec::len)
        + cut_letter
            .headers
            .iter()
            .map(|(n, v)| n.len() + v.len())
            .sum::<usize>();
    assert!(size <= limit && size > limit - 1024, "{size}");
    let ids: Vec<String> = predicted(&broker, &topics).into_keys().collect();
    assert_eq!(ids, ["g1", "g2"]);
}

/// Outputs a topic refuses as too large — its `max.message.bytes` below the producer's — end as
/// dead letters, and a dead letter refused in turn is sent without its value: never a retry for
/// ever, never a text that leaves nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outputs_and_dead_letters_a_topic_refuses_end_as_smaller_dead_letters() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = config(dir.path(), &[]);
    let topics = config.topics.clone();
    let broker = MemoryBroker::new();
    broker.ensure_topics(&config.broker());
    broker.limit_topic(&topics.predictions, 3_000);
    broker.limit_topic(&topics.dead_letter, 4_000);
    publish(&broker, &topics.labels, &example("round-1.jsonl"));
    let malformed = format!("{{\"id\":\"m\",\"text\":\"{}", "w".repeat(10_000));
    let with_metadata = serde_json::json!({
        "id": "meta",
        "text": "my parcel never arrived",
        "metadata": {"note": "n".repeat(5_000)},
    })
    .to_string();
    let texts = [
        malformed.clone(),
        text("g1", "the courier lost my parcel, tracking shows nothing"),
        with_metadata.clone(),
        text("g2", "I was charged twice on my card for one invoice"),
    ];
    publish(&broker, &topics.texts, &texts);
    let summary = serve_until(&broker, config, || {
        predicted(&broker, &topics).len() >= 2 && dead_letters(&broker, &topics).len() >= 2
    })
    .await;

    let letters = dead_letters(&broker, &topics);
    assert_eq!(
        letters.len(),
        2,
        "{:?}",
        letters.iter().map(|l| &l.headers).collect::<Vec<_>>()
    );
    for (offset, reason, original) in [
        (0, "malformed_json", malformed.len()),
        (2, "output_too_large", with_metadata.len()),
    ] {
        let letter = letter_of(&letters, &topics.texts, offset);
        assert_eq!(
            header(letter, "gorag.reason"),
            reason,
            "{:?}",
            letter.headers
        );
        assert!(letter.payload.is_empty(), "sent without its value");
        assert_eq!(header(letter, "gorag.truncated_from"), original.to_string());
    }
    let ids: Vec<String> = predicted(&broker, &topics).into_keys().collect();
    assert_eq!(ids, ["g1", "g2"]);
    assert_eq!(summary.texts_in, 4, "{summary:?}");
    assert_eq!(broker.committed("bounds").get(&0), Some(&4));
}

/// A label id of a megabyte (which would be copied into every prediction) is refused as
/// `over_limit`: its record is too large for the changelog too, and its dead letter keeps that
/// reason (its first 64 KiB kept); the round after it is applied and the text after it
/// predicted without it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_megabyte_label_id_is_refused_as_over_limit_and_never_copied() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = config(dir.path(), &[]);
    let topics = config.topics.clone();
    let broker = MemoryBroker::new();
    broker.ensure_topics(&config.broker());
    let huge = round(
        "huge",
        serde_json::json!([{"id": "i".repeat(1_000_000), "examples": ["an example"]}]),
    );
    let mut labels = vec![huge];
    labels.extend(example("round-1.jsonl"));
    publish(&broker, &topics.labels, &labels);
    publish(
        &broker,
        &topics.texts,
        &[text("g1", "I was charged twice on my card for one invoice")],
    );
    let summary = serve_until(&broker, config, || {
        !predicted(&broker, &topics).is_empty() && !dead_letters(&broker, &topics).is_empty()
    })
    .await;
    let letters = dead_letters(&broker, &topics);
    assert_eq!(
        letters.len(),
        1,
        "{:?}",
        letters.iter().map(|l| &l.headers).collect::<Vec<_>>()
    );
    let letter = letter_of(&letters, &topics.labels, 0);
    assert_eq!(header(letter, "gorag.reason"), "over_limit");
    let message = header(letter, "__connect.errors.exception.message");
    assert!(message.contains(keys::LABEL_ID_BYTES), "{message}");
    assert!(message.len() <= 300, "{message}");
    assert_eq!(letter.payload.len(), 64 * 1024, "cut to fit the changelog");
    let prediction = &predicted(&broker, &topics)["g1"];
    assert!(
        prediction.candidates.iter().all(|c| c.len() < 100),
        "{prediction:?}"
    );
    assert_eq!(summary.labels, 3, "{summary:?}");
}
