//! Records too large for what they become, against the real broker: a label event the
//! changelog cannot carry (dead-lettered once, the label events after it still applied), and
//! bad records whose error quotes them (their dead letters fit the broker; the records after
//! them still applied and predicted). The in-process flows of every bound:
//! `tests/bounds_in_process.rs`.

// Only the broker helpers are used here.
#[allow(dead_code)]
mod support;

use std::time::Duration;

use support::example;
use support::kafka::{predicted_ids, publish_json, read_until, Service, Topics};

/// A round of about 600 kB fits the labels topic, but its changelog record (the event and its
/// decoded update) does not fit the changelog: before, it was logged and skipped — never
/// applied, never dead-lettered. Now it is dead-lettered as `output_too_large` (its first
/// 64 kB kept) and the round after it is applied.
#[test]
fn a_label_event_too_large_for_the_changelog_is_dead_lettered_and_the_next_applied() {
    let dir = tempfile::tempdir().unwrap();
    let topics = Topics::new("big-round");
    let mut sets = topics.sets();
    sets.extend([
        format!("state.dir={}", dir.path().join("state").display()),
        "llm.url=none".into(),
        // Words only: the sentence encoder is not what these tests are about.
        "engine.embedding_model=none".into(),
        "kafka.partitions=1".into(),
    ]);
    let mut service = Service::start(dir.path(), &sets);
    service.wait_ready();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let example_text = "my parcel never arrived and the tracking page shows nothing ".repeat(100);
    let examples: Vec<String> = (0..100)
        .map(|i| format!(r#""{i} {example_text}""#))
        .collect();
    let big = format!(
        r#"{{"type":"round","round":"big","labels":[{{"id":"parcels","examples":[{}]}}]}}"#,
        examples.join(",")
    );
    assert!(big.len() > 500_000 && big.len() < 900_000, "{}", big.len());
    let mut labels = vec![big];
    labels.extend(example("round-1.jsonl"));
    rt.block_on(publish_json(&topics.labels, &labels));
    rt.block_on(publish_json(
        &topics.texts,
        &[r#"{"id":"after","text":"I was charged twice on my invoice"}"#.to_string()],
    ));
    let predictions = read_until(&topics.predictions, Duration::from_secs(90), |r| {
        !r.is_empty()
    });
    assert_eq!(predicted_ids(&predictions).len(), 1);
    read_until(&topics.dead_letter, Duration::from_secs(30), |r| {
        !r.is_empty()
    });
    // Once: a second would have come by now (the round after it is applied already).
    let dead = read_until(&topics.dead_letter, Duration::from_secs(5), |r| r.len() > 1);
    let log = service.stop();
    assert_eq!(dead.len(), 1, "{dead:?}\n{log}");
    let letter = &dead[0];
    assert_eq!(letter.headers["gorag.reason"], "output_too_large", "{log}");
    assert_eq!(letter.headers["__connect.errors.topic"], topics.labels);
    assert_eq!(letter.headers["__connect.errors.offset"], "0");
    assert_eq!(letter.value.len(), 64 * 1024);
    assert!(
        log.contains("label event too large for the changelog"),
        "{log}"
    );
}

/// A 700 kB text record whose field of the wrong type serde_json's error quotes whole, and a
/// round whose label id is 300 kB: before, the text's dead letter (a 700 kB error header beside
/// its value) was larger than the producer sends, refused, and the text left nothing; the label
/// id was taken and copied into every prediction. Now each gets a dead letter that fits (the
/// error cut to an excerpt, the value whole), and the round and text after them are applied
/// and predicted.
#[test]
fn bad_records_whose_errors_quote_them_leave_dead_letters_that_fit() {
    let dir = tempfile::tempdir().unwrap();
    let topics = Topics::new("quoted");
    let mut sets = topics.sets();
    sets.extend([
        format!("state.dir={}", dir.path().join("state").display()),
        "llm.url=none".into(),
        // Words only: the sentence encoder is not what these tests are about.
        "engine.embedding_model=none".into(),
        "kafka.partitions=1".into(),
    ]);
    let mut service = Service::start(dir.path(), &sets);
    service.wait_ready();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let long_id = "i".repeat(300_000);
    let bad_round = format!(
        r#"{{"type":"round","round":"huge","labels":[{{"id":"{long_id}","examples":["x y"]}}]}}"#
    );
    let mut labels = vec![bad_round.clone()];
    labels.extend(example("round-1.jsonl"));
    rt.block_on(publish_json(&topics.labels, &labels));
    let quoted = format!(
        r#"{{"id":"big","text":"my parcel","version":"{}"}}"#,
        "v".repeat(700_000)
    );
    rt.block_on(publish_json(
        &topics.texts,
        &[
            quoted.clone(),
            r#"{"id":"after","text":"I was charged twice on my invoice"}"#.to_string(),
        ],
    ));
    let predictions = read_until(&topics.predictions, Duration::from_secs(90), |r| {
        !r.is_empty()
    });
    let dead = read_until(&topics.dead_letter, Duration::from_secs(30), |r| {
        r.len() >= 2
    });
    let log = service.stop();
    assert_eq!(predicted_ids(&predictions).len(), 1, "{log}");
    assert_eq!(predictions[0].json()["label"], "billing", "{log}");
    assert_eq!(dead.len(), 2, "{dead:?}\n{log}");
    let of = |topic: &str| {
        dead.iter()
            .find(|r| r.headers["__connect.errors.topic"] == topic)
            .unwrap_or_else(|| panic!("no dead letter of {topic}: {log}"))
    };
    let text_letter = of(&topics.texts);
    assert_eq!(text_letter.headers["gorag.reason"], "invalid_event");
    assert_eq!(text_letter.value, quoted.as_bytes(), "the value kept whole");
    let label_letter = of(&topics.labels);
    assert_eq!(label_letter.headers["gorag.reason"], "over_limit");
    assert_eq!(label_letter.value, bad_round.as_bytes());
    for letter in [text_letter, label_letter] {
        let message = &letter.headers["__connect.errors.exception.message"];
        assert!(message.len() <= 1024, "{} bytes", message.len());
    }
    assert!(
        label_letter.headers["__connect.errors.exception.message"].contains("labels.max_id_bytes")
    );
}

/// The dead-letter topic takes less than the producer sends (its `max.message.bytes` 20,000),
/// and the predictions topic 5,000: a 100 kB bad record's dead letter, and the dead letter of a
/// text whose prediction is too large, are refused by the broker — and sent again without their
/// values, never retried for ever; the texts after them are predicted.
#[test]
fn dead_letters_the_broker_refuses_are_sent_without_their_values() {
    let dir = tempfile::tempdir().unwrap();
    let topics = Topics::new("small-dlq");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let brokers = support::kafka::brokers();
    rt.block_on(support::kafka::create_topic(
        &brokers,
        &topics.dead_letter,
        1,
        &[("max.message.bytes", "20000")],
    ));
    rt.block_on(support::kafka::create_topic(
        &brokers,
        &topics.predictions,
        1,
        &[("max.message.bytes", "5000")],
    ));
    let mut sets = topics.sets();
    sets.extend([
        format!("state.dir={}", dir.path().join("state").display()),
        "llm.url=none".into(),
        "engine.embedding_model=none".into(),
        "kafka.partitions=1".into(),
    ]);
    let mut service = Service::start(dir.path(), &sets);
    service.wait_ready();
    rt.block_on(publish_json(&topics.labels, &example("round-1.jsonl")));
    // Letters at random: the producer compresses (lz4), and the broker's limit is on what it
    // receives.
    let mut random = support::Lcg(7);
    let mut noise = |n: usize| -> String {
        (0..n)
            .map(|_| char::from(b'a' + (random.next() % 26) as u8))
            .collect()
    };
    let malformed = format!("{{\"id\":\"m\",\"text\":\"{}", noise(100_000));
    let with_metadata = serde_json::json!({
        "id": "meta",
        "text": "my parcel never arrived",
        "metadata": {"note": noise(30_000)},
    })
    .to_string();
    rt.block_on(support::kafka::publish(
        &topics.texts,
        &[
            (Some("m"), malformed.clone().into_bytes()),
            (
                Some("g1"),
                br#"{"id":"g1","text":"the courier lost my parcel"}"#.to_vec(),
            ),
            (Some("meta"), with_metadata.clone().into_bytes()),
            (
                Some("g2"),
                br#"{"id":"g2","text":"I was charged twice on my invoice"}"#.to_vec(),
            ),
        ],
    ));
    let predictions = read_until(&topics.predictions, Duration::from_secs(90), |r| {
        let ids = predicted_ids(r);
        ids.contains("g1") && ids.contains("g2")
    });
    let dead = read_until(&topics.dead_letter, Duration::from_secs(60), |r| {
        r.len() >= 2
    });
    let log = service.stop();
    let ids = predicted_ids(&predictions);
    assert!(ids.contains("g1") && ids.contains("g2"), "{ids:?}\n{log}");
    assert_eq!(dead.len(), 2, "{dead:?}\n{log}");
    for (key, reason, original) in [
        ("m", "malformed_json", malformed.len()),
        ("meta", "output_too_large", with_metadata.len()),
    ] {
        let letter = dead
            .iter()
            .find(|r| r.key.as_deref() == Some(key))
            .unwrap_or_else(|| panic!("no dead letter for {key}: {log}"));
        assert_eq!(letter.headers["gorag.reason"], reason, "{log}");
        assert!(letter.value.is_empty(), "sent without its value");
        assert_eq!(letter.headers["gorag.truncated_from"], original.to_string());
    }
    assert!(
        log.contains("dead letter refused by the broker; sending it without the rejected value"),
        "{log}"
    );
}
