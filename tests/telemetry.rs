//! Traces to a real OTLP receiver, Prometheus metrics and readiness of `gorag serve`
//! (real broker, service as a child process).

mod support;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use support::example;
use support::fake_llm::{FakeLlm, Reply};
use support::http::{get, OtlpReceiver};
use support::kafka::{
    predict_the_first_round, predicted_ids, publish, publish_json, read_until, Broker, Service,
    Topics,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_stage_of_a_text_reaches_a_real_otlp_receiver() {
    let llm = FakeLlm::start(Reply::FirstCandidate).await;
    let receiver = OtlpReceiver::start().await;
    let dir = tempfile::tempdir().unwrap();
    let topics = Topics::new("otlp");
    let mut sets = topics.sets();
    sets.extend([
        format!("state.dir={}", dir.path().join("state").display()),
        format!("llm.url={}", llm.url),
        "llm.model=fake-model".into(),
        "llm.ask_below=1".into(),
    ]);
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint.clone()),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json".to_string()),
        ("OTEL_SERVICE_NAME", "gorag-under-test".to_string()),
    ];
    let mut service = Service::start_with_env(dir.path(), &sets, &env);
    tokio::task::block_in_place(|| service.wait_ready());
    predict_the_first_round(&topics, Duration::from_secs(60)).await;
    // SIGTERM: the exporter is flushed before the process exits.
    tokio::task::block_in_place(|| service.stop());

    let spans = receiver.spans();
    assert!(!spans.is_empty(), "no span received");
    let text = spans
        .iter()
        .find(|s| {
            s.name == "text" && s.attributes.get("text_id").map(String::as_str) == Some("t-101")
        })
        .unwrap_or_else(|| panic!("no text span for t-101 in {spans:#?}"));
    assert_eq!(text.service, "gorag-under-test");
    assert_eq!(text.attributes["label"], "shipping");
    assert_eq!(text.attributes["source"], "llm");
    assert!(text.attributes.contains_key("partition") && text.attributes.contains_key("offset"));
    let children: Vec<_> = spans.iter().filter(|s| s.parent == text.id).collect();
    let names: HashSet<&str> = children.iter().map(|s| s.name.as_str()).collect();
    for stage in ["decode", "keywords", "retrieve", "llm", "index", "produce"] {
        assert!(
            names.contains(stage),
            "no {stage} span under the text span: {names:?}"
        );
    }
    assert!(children.iter().all(|s| s.trace == text.trace));
    let round = spans
        .iter()
        .find(|s| s.name == "label_event")
        .expect("label_event span");
    assert_eq!(round.attributes["round"], "r1");
    assert_eq!(round.attributes["event"], "round");
    // For the closing note: one text's trace.
    eprintln!("text t-101: {:.3} ms", text.duration_ms);
    for child in &children {
        eprintln!("  {:<9} {:.3} ms", child.name, child.duration_ms);
    }
    eprintln!("label_event r1: {:.3} ms", round.duration_ms);
}

/// `name{labels} value` lines of a Prometheus exposition.
fn metric(body: &str, series: &str) -> f64 {
    body.lines()
        .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

#[test]
fn metrics_count_what_the_service_did() {
    let dir = tempfile::tempdir().unwrap();
    let topics = Topics::new("metrics");
    let mut sets = topics.sets();
    sets.extend([
        format!("state.dir={}", dir.path().join("state").display()),
        "llm.url=none".into(),
    ]);
    let mut service = Service::start(dir.path(), &sets);
    service.wait_ready();
    let admin = service.admin_address();
    let (status, body) = get(&admin, "/healthz");
    assert_eq!(status, 200, "{body}");

    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(publish_json(&topics.labels, &example("round-1.jsonl")));
    rt.block_on(publish_json(&topics.texts, &example("texts-1.jsonl")));
    rt.block_on(publish(
        &topics.texts,
        &[
            (Some("bad-1"), b"not json".to_vec()),
            (Some("bad-2"), br#"{"id":"bad-2","text":""}"#.to_vec()),
        ],
    ));
    read_until(&topics.predictions, Duration::from_secs(60), |r| {
        predicted_ids(r).len() >= 4
    });
    read_until(&topics.dead_letter, Duration::from_secs(60), |r| {
        r.len() >= 2
    });
    // Gauges move on the service's periodic tick (kafka.commit_interval_ms).
    let started = Instant::now();
    let body = loop {
        let (status, body) = get(&admin, "/metrics");
        assert_eq!(status, 200);
        let settled = metric(&body, "gorag_graph_nodes") > 0.0
            && metric(&body, "gorag_in_flight") == 0.0
            && body.contains("gorag_consumer_lag{partition=");
        if settled || started.elapsed() > Duration::from_secs(15) {
            break body;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    for (series, expected) in [
        ("gorag_texts_received_total", 6.0),
        ("gorag_dead_letters_total{reason=\"malformed_json\"}", 1.0),
        ("gorag_dead_letters_total{reason=\"empty_text\"}", 1.0),
        ("gorag_label_events_total", 1.0),
        ("gorag_labels{state=\"active\"}", 3.0),
        ("gorag_stage_seconds_count{stage=\"retrieve\"}", 4.0),
        ("gorag_stage_seconds_count{stage=\"index\"}", 4.0),
        ("gorag_stage_seconds_count{stage=\"decode\"}", 6.0),
        ("gorag_in_flight", 0.0),
    ] {
        assert_eq!(metric(&body, series), expected, "{series} in:\n{body}");
    }
    // Every prediction counted once, by status: decided over all is the live coverage.
    let predictions: f64 = ["decided", "needs_review", "no_match"]
        .iter()
        .map(|status| {
            metric(
                &body,
                &format!("gorag_predictions_total{{source=\"graph\",status=\"{status}\"}}"),
            )
        })
        .sum();
    assert_eq!(predictions, 4.0, "{body}");
    // The example round has two examples a label: each scored against the other, but the one
    // short example's outcome is not recorded (read by the short-text weights, it would skew
    // the recalibration of the long texts: docs/design/confidence.md, "Short texts").
    assert_eq!(metric(&body, "gorag_confidence_outcomes"), 5.0, "{body}");
    assert!(metric(&body, "gorag_graph_nodes") > 100.0, "{body}");
    assert!(metric(&body, "gorag_graph_edges") > 100.0, "{body}");
    // Below the default capacity nothing is forgotten: every phrase of the examples and texts.
    assert!(metric(&body, "gorag_keyword_phrases") > 100.0, "{body}");
    assert!(body.contains("gorag_consumer_lag{partition="), "{body}");
    every_dashboard_metric_is_exported(&body);
    let (status, body) = get(&admin, "/readyz");
    assert_eq!(status, 200, "{body}");
    service.stop();
}

/// Every metric the Grafana dashboard queries of the service is a family it exports (its
/// `# TYPE` line is there after a stream), so no panel stays empty because of a renamed metric.
/// The review desk's own (`gorag_review_*`) are checked by tests/review_desk.rs.
fn every_dashboard_metric_is_exported(metrics: &str) {
    let queried: Vec<String> = support::dashboard_metric_families()
        .into_iter()
        .filter(|family| !family.starts_with("gorag_review_"))
        .collect();
    assert!(
        queried.len() >= 15,
        "the dashboard queries only {queried:?}"
    );
    let missing: Vec<_> = queried
        .iter()
        .filter(|family| !metrics.contains(&format!("# TYPE {family} ")))
        .collect();
    assert!(
        missing.is_empty(),
        "not on /metrics: {missing:?}\n{metrics}"
    );
}

#[test]
fn readiness_flips_when_the_broker_goes_away() {
    // A broker of this test's own, so stopping it disturbs no other test.
    let broker_dir = tempfile::tempdir().unwrap();
    let mut broker = Broker::start(broker_dir.path(), "memory://nisshi/");
    let brokers = broker.address.clone();
    let dir = tempfile::tempdir().unwrap();
    let topics = Topics::new("ready");
    let mut sets = topics.sets();
    sets.extend([
        format!("kafka.brokers={brokers}"),
        format!("state.dir={}", dir.path().join("state").display()),
        "llm.url=none".into(),
        "kafka.commit_interval_ms=200".into(),
    ]);
    let mut service = Service::start(dir.path(), &sets);
    let admin = service.admin_address();
    service.wait_ready();
    let wait_for = |want: u16| {
        let started = Instant::now();
        loop {
            let (status, body) = get(&admin, "/readyz");
            if status == want {
                return body;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "/readyz stayed {status} ({body}), wanted {want}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    wait_for(200);
    broker.stop("KILL");
    let body = wait_for(503);
    assert!(body.contains("\"broker_reachable\":false"), "{body}");
    assert_eq!(get(&admin, "/healthz").0, 200, "still alive");
    service.kill();
}
