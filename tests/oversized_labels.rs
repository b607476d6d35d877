//! A label event the changelog cannot carry, against the real broker: dead-lettered once, and
//! the label events after it still applied.

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
