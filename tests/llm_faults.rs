//! LLM client and classifier behaviour under scripted faults (fake server on loopback).

mod support;

use std::time::{Duration, Instant};

use gorag::engine::answer::HallucinationKind;
use gorag::engine::keywords::KeywordMode;
use gorag::engine::prompt::Prompt;
use gorag::engine::{Engine, EngineConfig, NewLabel, Source};
use gorag::llm::retry::RetryPolicy;
use gorag::llm::{AttemptError, LlmClient, LlmConfig, LlmError};
use gorag::one_text::TextSteps;
use support::fake_llm::{FakeLlm, Reply};

fn client(
    url: &str,
    retries: u32,
    timeout: Duration,
    cache: Option<&std::path::Path>,
) -> LlmClient {
    let mut config = LlmConfig::new(url, "fake-model");
    config.timeout = timeout;
    config.retry = RetryPolicy {
        max_retries: retries,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(40),
        budget: Duration::from_secs(30),
    };
    config.cache_dir = cache.map(|p| p.to_path_buf());
    LlmClient::new(config).expect("client")
}

fn classifier(url: &str, retries: u32, mode: KeywordMode) -> TextSteps {
    TextSteps::new(
        Some(client(url, retries, Duration::from_secs(5), None)),
        mode,
    )
}

fn prompt() -> Prompt {
    Prompt {
        system: "sys".into(),
        user: "classify this".into(),
        max_tokens: 8,
        top_logprobs: None,
    }
}

fn engine() -> Engine {
    let mut engine = Engine::new(EngineConfig {
        // Every text is asked: these tests are about the LLM's answers.
        ask_below: 1.0,
        ..EngineConfig::default()
    });
    let label = |id: &str, text: &str| NewLabel {
        id: id.into(),
        name: Some(id.into()),
        description: None,
        examples: vec![text.into()],
    };
    engine
        .apply_round(
            None,
            &[
                label("astronomy", "telescope galaxies stars planets"),
                label("cooking", "bread dough flour yeast oven"),
                label("football", "striker goal match league"),
            ],
        )
        .expect("round");
    engine
}

#[tokio::test]
async fn retries_429_and_500_then_succeeds() {
    let fake = FakeLlm::start(Reply::Answer("astronomy".into())).await;
    fake.push([
        Reply::Status(429, Some(0)),
        Reply::Status(500, None),
        Reply::Status(503, None),
    ]);
    let llm = client(&fake.url, 4, Duration::from_secs(5), None);
    let answer = llm.complete(&prompt()).await.expect("answer after retries");
    assert_eq!(answer.text, "astronomy");
    assert_eq!(answer.attempts, 4);
    assert_eq!((answer.prompt_tokens, answer.completion_tokens), (11, 3));
    let usage = llm.usage().snapshot();
    assert_eq!((usage.attempts, usage.retries, usage.failures), (4, 3, 0));
    assert_eq!(usage.prompt_tokens, 11);
    // The request carried temperature 0, the model and the answer bound.
    let body: serde_json::Value = serde_json::from_str(&fake.requests()[0]).expect("json body");
    assert_eq!(body["temperature"], 0.0);
    assert_eq!(body["model"], "fake-model");
    assert_eq!(body["max_completion_tokens"], 8);
}

#[tokio::test]
async fn retry_after_is_waited_for() {
    let fake = FakeLlm::start(Reply::Answer("ok".into())).await;
    fake.push([Reply::Status(429, Some(1))]);
    let llm = client(&fake.url, 2, Duration::from_secs(5), None);
    let started = Instant::now();
    llm.complete(&prompt()).await.expect("answer");
    // Our own back-off would be ≤ 40 ms; one second can only come from retry-after.
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn retries_are_bounded() {
    let fake = FakeLlm::start(Reply::Status(500, None)).await;
    let llm = client(&fake.url, 2, Duration::from_secs(5), None);
    let error = llm.complete(&prompt()).await.expect_err("must give up");
    match &error {
        LlmError::Exhausted { attempts, last } => {
            assert_eq!(*attempts, 3);
            assert!(matches!(last, AttemptError::Status { status: 500, .. }));
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(error.reason(), "server_error");
    assert_eq!(fake.requests().len(), 3);
    assert_eq!(llm.usage().snapshot().failures, 1);
}

#[tokio::test]
async fn hangs_time_out_and_are_retried() {
    let fake = FakeLlm::start(Reply::Answer("cooking".into())).await;
    fake.push([Reply::Hang]);
    let llm = client(&fake.url, 1, Duration::from_millis(300), None);
    let answer = llm
        .complete(&prompt())
        .await
        .expect("second attempt answers");
    assert_eq!(answer.text, "cooking");
    assert_eq!(answer.attempts, 2);

    fake.push([Reply::Hang, Reply::Hang]);
    let error = llm
        .complete(&prompt())
        .await
        .expect_err("both attempts hang");
    assert_eq!(error.reason(), "timeout");
}

#[tokio::test]
async fn malformed_and_empty_answers_are_retried() {
    let fake = FakeLlm::start(Reply::Answer("football".into())).await;
    fake.push([Reply::Malformed, Reply::Empty]);
    let llm = client(&fake.url, 3, Duration::from_secs(5), None);
    let answer = llm
        .complete(&prompt())
        .await
        .expect("third attempt answers");
    assert_eq!((answer.text.as_str(), answer.attempts), ("football", 3));
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let fake = FakeLlm::start(Reply::Status(400, None)).await;
    let llm = client(&fake.url, 3, Duration::from_secs(5), None);
    let error = llm.complete(&prompt()).await.expect_err("400 is final");
    assert!(
        matches!(error, LlmError::Rejected { status: 400, .. }),
        "{error:?}"
    );
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test]
async fn connection_refused_is_retried_then_reported() {
    // Bind and drop a listener: nothing listens on that port any more.
    let port = support::free_port();
    let llm = client(
        &format!("http://127.0.0.1:{port}/v1"),
        1,
        Duration::from_secs(2),
        None,
    );
    let error = llm.complete(&prompt()).await.expect_err("nobody listens");
    assert_eq!(error.reason(), "transport");
}

#[tokio::test]
async fn cache_serves_repeats_and_never_stores_failures() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fake = FakeLlm::start(Reply::Answer("astronomy".into())).await;
    fake.push([Reply::Status(500, None)]);
    let llm = client(&fake.url, 0, Duration::from_secs(5), Some(dir.path()));
    assert!(llm.complete(&prompt()).await.is_err(), "first call fails");
    let first = llm
        .complete(&prompt())
        .await
        .expect("second call reaches the server");
    assert!(!first.cached);
    let again = llm.complete(&prompt()).await.expect("cached");
    assert!(again.cached);
    assert_eq!(again.text, "astronomy");
    assert_eq!(fake.requests().len(), 2, "the cached call made no request");
    let mut other = prompt();
    other.max_tokens = 9;
    assert!(
        !llm.complete(&other)
            .await
            .expect("different parameters")
            .cached
    );
    llm.flush_cache().await.expect("flush");
    drop(llm);
    // A fresh client on the same directory still has the answer. sled releases its file lock
    // when its background flusher notices the drop, so the reopen may need a moment.
    let mut reopened = None;
    for _ in 0..50 {
        let mut config = LlmConfig::new(fake.url.as_str(), "fake-model");
        config.cache_dir = Some(dir.path().to_path_buf());
        if let Ok(c) = LlmClient::new(config) {
            reopened = Some(c);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let reopened = reopened.expect("cache reopens once the first client is gone");
    assert!(
        reopened
            .complete(&prompt())
            .await
            .expect("from disk")
            .cached
    );
}

#[tokio::test]
async fn out_of_set_answers_are_flagged_and_fall_back_to_the_graph() {
    let fake = FakeLlm::start(Reply::Answer("marine biology".into())).await;
    let classifier = classifier(&fake.url, 0, KeywordMode::Tfidf);
    let engine = engine();
    let result = classifier
        .classify(&engine, "the telescope saw new galaxies and stars")
        .await
        .expect("classified");
    assert_eq!(result.raw_answer.as_deref(), Some("marine biology"));
    assert_eq!(
        result.decision.hallucination,
        Some(HallucinationKind::UnknownLabel)
    );
    assert_eq!(result.decision.source, Source::Graph);
    assert_eq!(result.decision.label, "astronomy");

    fake.push([Reply::Answer("Football".into())]);
    let result = classifier
        .classify(&engine, "the telescope saw new galaxies and stars")
        .await
        .expect("classified");
    assert_eq!(
        result.decision.hallucination,
        Some(HallucinationKind::OutsideCandidates)
    );
    assert_eq!(
        (result.decision.label.as_str(), result.decision.source),
        ("football", Source::Llm)
    );
}

#[tokio::test]
async fn exhausted_llm_falls_back_to_the_graph_prediction() {
    let fake = FakeLlm::start(Reply::Status(503, None)).await;
    let classifier = classifier(&fake.url, 1, KeywordMode::Tfidf);
    let result = classifier
        .classify(&engine(), "knead the bread dough with yeast")
        .await
        .expect("classified");
    assert_eq!(result.llm_failure.as_deref(), Some("server_error"));
    assert_eq!(result.decision.source, Source::Graph);
    assert_eq!(result.decision.label, "cooking");
    assert_eq!(result.decision.hallucination, None);
}

#[tokio::test]
async fn descriptions_are_requested_for_named_labels_only() {
    let fake = FakeLlm::start(Reply::Answer("Studies of the sky and stars.".into())).await;
    let classifier = classifier(&fake.url, 0, KeywordMode::Tfidf);
    let mut labels = vec![
        NewLabel {
            id: "astronomy".into(),
            name: Some("astronomy".into()),
            description: None,
            examples: vec![],
        },
        NewLabel {
            id: "label 3".into(),
            name: None,
            description: None,
            examples: vec![],
        },
        NewLabel {
            id: "given".into(),
            name: Some("given".into()),
            description: Some("already described".into()),
            examples: vec![],
        },
    ];
    assert_eq!(classifier.describe_labels(&mut labels, 2).await, 1);
    assert_eq!(
        labels[0].description.as_deref(),
        Some("Studies of the sky and stars.")
    );
    assert_eq!(labels[1].description, None);
    assert_eq!(labels[2].description.as_deref(), Some("already described"));
    assert!(fake.requests()[0].contains("astronomy"));
}

#[tokio::test]
async fn a_rounds_descriptions_are_asked_side_by_side_and_kept_as_they_arrive() {
    // The first request hangs (until the 5 s client timeout). Asked one after another, no
    // label would be described within a second and a half; two at a time, the two others
    // are, and a caller that stops waiting then (the service's budget for a round) keeps
    // their descriptions.
    let fake = FakeLlm::start(Reply::Answer("A field of study.".into())).await;
    fake.push([Reply::Hang]);
    let classifier = classifier(&fake.url, 0, KeywordMode::Tfidf);
    let named = |id: &str| NewLabel {
        id: id.into(),
        name: Some(id.into()),
        description: None,
        examples: vec![],
    };
    let mut labels = vec![named("astronomy"), named("botany"), named("chemistry")];
    let describing = classifier.describe_labels(&mut labels, 2);
    let cut = tokio::time::timeout(Duration::from_millis(1500), describing).await;
    assert!(cut.is_err(), "the hanging call outlasts the wait");
    let described: Vec<&str> = labels
        .iter()
        .filter(|l| l.description.is_some())
        .map(|l| l.id.as_str())
        .collect();
    assert_eq!(described.len(), 2, "described: {described:?}");
    assert_eq!(fake.requests().len(), 3);

    // One at a time (what the service asks beside texts with two calls allowed), the hanging
    // call holds the rest back.
    fake.push([Reply::Hang]);
    let mut labels = vec![named("geology"), named("zoology")];
    let describing = classifier.describe_labels(&mut labels, 1);
    let cut = tokio::time::timeout(Duration::from_millis(1500), describing).await;
    assert!(cut.is_err());
    assert!(labels.iter().all(|l| l.description.is_none()));
    assert_eq!(fake.requests().len(), 4, "one call at a time");
}

#[test]
fn the_service_describes_a_round_leaving_the_texts_a_call() {
    let with = |concurrency: usize| {
        let mut config = LlmConfig::new("http://127.0.0.1:9/v1", "fake-model");
        config.concurrency = concurrency;
        let client = LlmClient::new(config).expect("client");
        TextSteps::new(Some(client), KeywordMode::Tfidf).describing_beside_texts()
    };
    assert_eq!([with(1), with(2), with(4)], [1, 1, 3]);
}

#[tokio::test]
async fn llm_keyword_mode_keeps_only_phrases_of_the_text() {
    let fake = FakeLlm::start(Reply::Answer("astronomy".into())).await;
    fake.push([Reply::Answer("1. Telescope\n2. galaxies, unicorn".into())]);
    let classifier = classifier(&fake.url, 0, KeywordMode::Llm);
    let result = classifier
        .classify(&engine(), "the telescope saw new galaxies and stars")
        .await
        .expect("classified");
    let mut keywords: Vec<&str> = result
        .analysis
        .keywords
        .iter()
        .map(|k| k.phrase.as_str())
        .collect();
    keywords.sort();
    assert_eq!(keywords, vec!["galaxies", "telescope"]);
    assert_eq!(result.llm_calls, 2);
    assert!(fake.requests()[0].contains("Extract the keywords"));
    assert_eq!(result.decision.label, "astronomy");
}
