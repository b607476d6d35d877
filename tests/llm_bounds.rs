//! The LLM client's bounds against a scripted endpoint (fake server on loopback, for what a
//! real model cannot do on demand): a response past the size cap, a retry time budget, the
//! circuit breaker, and the API key's way to the endpoint.

mod support;

use std::time::{Duration, Instant};

use gorag::config::{Layers, ServeConfig};
use gorag::engine::keywords::KeywordMode;
use gorag::engine::prompt::Prompt;
use gorag::engine::{Engine, EngineConfig, NewLabel, Source};
use gorag::llm::breaker::{BreakerSettings, BreakerState};
use gorag::llm::retry::RetryPolicy;
use gorag::llm::{ApiKey, AttemptError, LlmClient, LlmConfig, LlmError};
use gorag::one_text::TextSteps;
use support::fake_llm::{FakeLlm, Reply};

/// 300 MB: the answer the security review measured (9.5 s and 1.25 GB read whole).
const HUGE: u64 = 300_000_000;

fn config(url: &str) -> LlmConfig {
    let mut config = LlmConfig::new(url, "fake-model");
    config.timeout = Duration::from_secs(10);
    config.retry = RetryPolicy {
        max_retries: 3,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(40),
        budget: Duration::from_secs(30),
    };
    config
}

fn client(config: LlmConfig) -> LlmClient {
    LlmClient::new(config).expect("client")
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
            ],
        )
        .expect("round");
    engine
}

#[tokio::test]
async fn a_huge_answer_is_cut_at_the_cap_and_not_retried() {
    for declared in [true, false] {
        let fake = FakeLlm::start(Reply::Huge {
            bytes: HUGE,
            declared,
        })
        .await;
        let llm = client(config(&fake.url));
        let started = Instant::now();
        let error = llm.complete(&prompt()).await.expect_err("past the cap");
        let took = started.elapsed();
        assert!(
            matches!(error, LlmError::Oversized { limit, .. } if limit == 1 << 20),
            "{error:?}"
        );
        assert_eq!(error.reason(), "oversized_response");
        let text = error.to_string();
        assert!(
            text.contains("llm.max_response_bytes (1048576 bytes"),
            "{text}"
        );
        if declared {
            assert!(text.contains("it declared 300000"), "{text}");
        }
        // The same request would get the same answer: one request, no retry.
        assert_eq!(fake.requests().len(), 1, "declared: {declared}");
        let usage = llm.usage().snapshot();
        assert_eq!((usage.oversized, usage.failures, usage.retries), (1, 1, 0));
        // The client stopped reading at the cap: the server got rid of a few socket buffers'
        // worth at most, nowhere near the 300 MB.
        let sent = fake.huge_bytes_sent();
        assert!(sent < 32 << 20, "declared {declared}: {sent} bytes taken");
        eprintln!("300 MB answer, declared: {declared}: failed in {took:?}, {sent} bytes taken");
    }
}

#[tokio::test]
async fn an_answer_within_the_cap_is_read_whole() {
    let fake = FakeLlm::start(Reply::Answer("astronomy".into())).await;
    let mut small = config(&fake.url);
    // The fake's completion JSON with a one-word answer is about 250 bytes.
    small.max_response_bytes = 4096;
    let llm = client(small);
    let answer = llm.complete(&prompt()).await.expect("small enough");
    assert_eq!(answer.text, "astronomy");
    fake.push([Reply::Huge {
        bytes: 5000,
        declared: false,
    }]);
    let error = llm.complete(&prompt()).await.expect_err("5000 > 4096");
    assert!(matches!(
        error,
        LlmError::Oversized {
            limit: 4096,
            declared: None
        }
    ));
}

#[tokio::test]
async fn a_huge_answer_leaves_the_text_to_retrieval() {
    let fake = FakeLlm::start(Reply::Huge {
        bytes: HUGE,
        declared: false,
    })
    .await;
    let classifier = TextSteps::new(Some(client(config(&fake.url))), KeywordMode::Tfidf);
    let result = classifier
        .classify(&engine(), "knead the bread dough with yeast")
        .await
        .expect("classified");
    assert_eq!(result.decision.source, Source::Graph);
    assert_eq!(result.decision.label, "cooking");
    assert_eq!(result.llm_failure.as_deref(), Some("oversized_response"));
    let said = result.llm_error.unwrap_or_default();
    assert!(said.starts_with("oversized_response: "), "{said}");
    assert!(said.contains("llm.max_response_bytes"), "{said}");
}

#[tokio::test]
async fn a_retry_after_past_the_budget_ends_the_call_at_once() {
    let fake = FakeLlm::start(Reply::Status(429, Some(3))).await;
    let mut tight = config(&fake.url);
    tight.retry.budget = Duration::from_secs(1);
    let llm = client(tight);
    let started = Instant::now();
    let error = llm.complete(&prompt()).await.expect_err("cannot wait 3 s");
    // Waiting would end past the 1 s budget: no wait, no second request.
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    match &error {
        LlmError::OutOfTime { attempts, last, .. } => {
            assert_eq!(*attempts, 1);
            assert!(matches!(last, AttemptError::Status { status: 429, .. }));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(error.reason(), "rate_limited");
    assert!(error.to_string().contains("llm.max_retry_secs"), "{error}");
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test]
async fn retries_stop_at_the_budget_and_the_last_attempt_gets_what_is_left() {
    // Every attempt hangs: 400 ms each would make 4 attempts 1.6 s; the budget is 700 ms.
    let fake = FakeLlm::start(Reply::Hang).await;
    let mut hanging = config(&fake.url);
    hanging.timeout = Duration::from_millis(400);
    hanging.retry.max_retries = 10;
    hanging.retry.budget = Duration::from_millis(700);
    let llm = client(hanging);
    let started = Instant::now();
    let error = llm
        .complete(&prompt())
        .await
        .expect_err("every attempt hangs");
    let took = started.elapsed();
    let (attempts, last) = match &error {
        LlmError::Exhausted { attempts, last } | LlmError::OutOfTime { attempts, last, .. } => {
            (*attempts, last)
        }
        other => panic!("{other:?}"),
    };
    assert_eq!(attempts, 2, "{error}");
    // The second attempt had only what was left of the 700 ms.
    match last {
        AttemptError::Timeout(limit) => assert!(*limit < Duration::from_millis(400), "{limit:?}"),
        other => panic!("{other:?}"),
    }
    assert!(took < Duration::from_millis(1200), "{took:?}");
    assert_eq!(fake.requests().len(), 2);
}

fn breaking(url: &str, failures: u32, cooldown: Duration) -> LlmClient {
    let mut config = config(url);
    config.retry.max_retries = 0;
    config.breaker = BreakerSettings { failures, cooldown };
    client(config)
}

#[tokio::test]
async fn the_breaker_opens_skips_calls_and_closes_after_a_probe_is_answered() {
    let fake = FakeLlm::start(Reply::Status(500, None)).await;
    let llm = breaking(&fake.url, 3, Duration::from_millis(500));
    for _ in 0..3 {
        let error = llm.complete(&prompt()).await.expect_err("500");
        assert_eq!(error.reason(), "server_error");
    }
    assert_eq!(llm.breaker_state(), BreakerState::Open);
    // Open: calls are refused without a request.
    for _ in 0..5 {
        let error = llm.complete(&prompt()).await.expect_err("open");
        assert_eq!(error.reason(), "breaker_open");
        assert!(
            error.to_string().contains("3 failed LLM calls in a row"),
            "{error}"
        );
    }
    assert_eq!(fake.requests().len(), 3, "no request while open");
    let usage = llm.usage().snapshot();
    assert_eq!(
        (
            usage.breaker_skipped,
            usage.breaker_openings,
            usage.failures
        ),
        (5, 1, 3)
    );
    assert_eq!(usage.breaker, BreakerState::Open);

    // After the cool-down one probe goes; it is answered, and the breaker closes.
    tokio::time::sleep(Duration::from_millis(550)).await;
    assert_eq!(llm.breaker_state(), BreakerState::HalfOpen);
    fake.push([Reply::Answer("astronomy".into())]);
    assert_eq!(
        llm.complete(&prompt()).await.expect("probe").text,
        "astronomy"
    );
    assert_eq!(llm.breaker_state(), BreakerState::Closed);
    assert_eq!(fake.requests().len(), 4);
    // Closed with a fresh count: two failures do not open it again, the third does.
    for _ in 0..2 {
        llm.complete(&prompt()).await.expect_err("500");
    }
    assert_eq!(llm.breaker_state(), BreakerState::Closed);
    llm.complete(&prompt()).await.expect_err("500");
    assert_eq!(llm.breaker_state(), BreakerState::Open);
    assert_eq!(llm.usage().snapshot().breaker_openings, 2);
}

#[tokio::test]
async fn a_failed_probe_opens_the_breaker_for_another_cooldown() {
    let fake = FakeLlm::start(Reply::Status(503, None)).await;
    let llm = breaking(&fake.url, 1, Duration::from_millis(300));
    llm.complete(&prompt()).await.expect_err("503 opens it");
    tokio::time::sleep(Duration::from_millis(350)).await;
    // The probe fails (with a single attempt, whatever llm.retries says): open again.
    llm.complete(&prompt()).await.expect_err("the probe fails");
    assert_eq!(fake.requests().len(), 2);
    assert_eq!(llm.breaker_state(), BreakerState::Open);
    let error = llm.complete(&prompt()).await.expect_err("open again");
    assert_eq!(error.reason(), "breaker_open");
    assert_eq!(fake.requests().len(), 2);
    assert_eq!(llm.usage().snapshot().breaker_openings, 2);
}

#[tokio::test]
async fn while_the_breaker_is_open_texts_are_decided_by_retrieval() {
    let fake = FakeLlm::start(Reply::Hang).await;
    let mut hanging = config(&fake.url);
    hanging.timeout = Duration::from_millis(200);
    hanging.retry.max_retries = 0;
    hanging.breaker = BreakerSettings {
        failures: 2,
        cooldown: Duration::from_secs(60),
    };
    let classifier = TextSteps::new(Some(client(hanging)), KeywordMode::Tfidf);
    let engine = engine();
    for _ in 0..2 {
        let timed_out = classifier
            .classify(&engine, "the telescope saw new galaxies")
            .await
            .expect("classified");
        assert_eq!(timed_out.llm_failure.as_deref(), Some("timeout"));
    }
    let started = Instant::now();
    let skipped = classifier
        .classify(&engine, "the telescope saw new galaxies")
        .await
        .expect("classified");
    // Not asked: no 200 ms timeout waited out.
    assert!(started.elapsed() < Duration::from_millis(200));
    assert_eq!(skipped.decision.source, Source::Graph);
    assert_eq!(skipped.decision.label, "astronomy");
    assert_eq!(skipped.llm_failure.as_deref(), Some("breaker_open"));
    let said = skipped.llm_error.unwrap_or_default();
    assert!(said.contains("circuit breaker open"), "{said}");
    assert_eq!(fake.requests().len(), 2);
}

#[tokio::test]
async fn the_key_goes_to_a_loopback_endpoint_and_never_into_an_error() {
    let fake = FakeLlm::start(Reply::EchoAuthorization(401)).await;
    let mut keyed = config(&fake.url);
    keyed.api_key = ApiKey::new("sk-test-0123456789");
    let llm = client(keyed);
    let error = llm.complete(&prompt()).await.expect_err("401");
    // The endpoint quoted the header back; the error says *** instead.
    let text = error.to_string();
    assert!(text.contains("Bearer ***"), "{text}");
    assert!(!text.contains("sk-test-0123456789"), "{text}");
    assert!(!format!("{error:?}").contains("sk-test-0123456789"));
    assert!(!format!("{llm:?}").contains("sk-test-0123456789"));
    let head = fake.heads().join("\n").to_ascii_lowercase();
    assert!(
        head.contains("authorization: bearer sk-test-0123456789"),
        "{head}"
    );
}

#[test]
fn the_key_is_refused_over_plain_http_to_another_host_unless_allowed() {
    let keyed = |url: &str, allow: bool| {
        let mut config = LlmConfig::new(url, "m");
        config.api_key = ApiKey::new("sk-test");
        config.allow_insecure_key = allow;
        LlmClient::new(config)
    };
    let error = keyed("http://10.0.0.1:8000/v1", false).expect_err("plain http elsewhere");
    assert_eq!(error.reason(), "insecure_key");
    let text = error.to_string();
    assert!(text.contains("http://10.0.0.1:8000"), "{text}");
    assert!(text.contains("https://") && text.contains("llm.allow_insecure_key = true"));
    assert!(keyed("http://10.0.0.1:8000/v1", true).is_ok());
    assert!(keyed("http://127.0.0.1:8000/v1", false).is_ok());
    assert!(keyed("http://localhost:8000/v1", false).is_ok());
    assert!(keyed("https://10.0.0.1/v1", false).is_ok());
    // No key, nothing to protect.
    assert!(LlmClient::new(LlmConfig::new("http://10.0.0.1:8000/v1", "m")).is_ok());
}

fn load(sets: &[&str]) -> Result<ServeConfig, String> {
    ServeConfig::load(&Layers {
        file: None,
        env: Vec::new(),
        sets: sets.iter().map(|s| s.to_string()).collect(),
    })
    .map_err(|e| e.to_string())
}

#[test]
fn the_configuration_check_refuses_a_key_over_plain_http_and_unbounded_retries() {
    let key = "llm.api_key_file=/run/secrets/llm-key";
    let error = load(&["llm.url=http://10.0.0.1:8000/v1", key]).expect_err("refused");
    assert!(
        error.contains("llm.url: the LLM API key would be sent unencrypted"),
        "{error}"
    );
    assert!(error.contains("llm.allow_insecure_key = true"), "{error}");
    load(&[
        "llm.url=http://10.0.0.1:8000/v1",
        key,
        "llm.allow_insecure_key=true",
    ])
    .expect("allowed explicitly");
    load(&["llm.url=http://127.0.0.1:8000/v1", key]).expect("loopback");
    load(&["llm.url=https://llm.example.com/v1", key]).expect("https");
    load(&["llm.url=http://10.0.0.1:8000/v1"]).expect("no key file");

    let error = load(&[
        "llm.retries=11",
        "llm.max_retry_secs=0",
        "llm.max_response_bytes=0",
        "llm.breaker_cooldown_secs=-1",
    ])
    .expect_err("out of bounds");
    for key in [
        "llm.retries: 11 is more than 10",
        "llm.max_retry_secs: must be a positive",
        "llm.max_response_bytes: must be at least 1",
        "llm.breaker_cooldown_secs: must be a positive",
    ] {
        assert!(error.contains(key), "{key} in {error}");
    }
    let fine = load(&["llm.retries=10", "llm.breaker_failures=0"]).expect("within bounds");
    assert_eq!(fine.llm.max_response_bytes, 1 << 20);
    assert_eq!(fine.llm.max_retry_secs, 120.0);
    assert_eq!(fine.llm.breaker_cooldown_secs, 30.0);
}

/// `gorag serve` in this process over the in-memory broker, its LLM the fake: the first
/// answers 300 MB each, then a 500 every time. Every text is predicted by retrieval, each saying
/// why; the breaker stops the asking after two failures in a row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_predicts_every_text_past_huge_answers_and_an_open_breaker() {
    use gorag::broker::{MemoryBroker, Outgoing, Transport};
    use gorag::events::Prediction;

    const HUGE_ANSWERS: usize = 3;
    let fake = FakeLlm::start(Reply::Status(500, None)).await;
    fake.push((0..HUGE_ANSWERS).map(|_| Reply::Huge {
        bytes: HUGE,
        declared: false,
    }));
    let dir = tempfile::tempdir().expect("tempdir");
    let sets = [
        format!("state.dir={}", dir.path().join("state").display()),
        "kafka.group_id=llm-bounds".into(),
        "kafka.partitions=1".into(),
        "admin.listen=127.0.0.1:0".into(),
        format!("llm.url={}", fake.url),
        "llm.ask_below=1".into(),
        "llm.describe_labels=false".into(),
        "llm.retries=0".into(),
        "llm.breaker_failures=2".into(),
        "llm.breaker_cooldown_secs=600".into(),
        "engine.embedding_model=none".into(),
        "discovery.enabled=false".into(),
    ];
    let config = ServeConfig::load(&Layers {
        file: None,
        env: Vec::new(),
        sets: sets.to_vec(),
    })
    .expect("a valid configuration");
    let topics = config.topics.clone();
    let broker = MemoryBroker::new();
    broker.ensure_topics(&config.broker());
    let publish = |topic: &str, lines: &[String]| {
        for line in lines {
            let value: serde_json::Value = serde_json::from_str(line).expect("JSON");
            let key = value["id"].as_str().map(|k| k.as_bytes().to_vec());
            broker
                .append(&Outgoing {
                    topic: topic.to_string(),
                    key,
                    payload: line.as_bytes().to_vec(),
                    headers: Vec::new(),
                })
                .expect("the topic exists");
        }
    };
    publish(&topics.labels, &support::example("round-1.jsonl"));
    let texts = support::ticket_texts(3, "t", 24, 8);
    publish(&topics.texts, &texts);

    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let service = gorag::serve::serve_on(Transport::Memory(broker.clone()), config, async move {
        let _ = stopped.await;
    });
    let predictions = || -> Vec<Prediction> {
        broker
            .records(&topics.predictions)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|r| serde_json::from_slice::<Prediction>(&r.payload).ok())
            .collect()
    };
    let steps = async {
        let started = Instant::now();
        while predictions().len() < texts.len() {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "not every text predicted"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let _ = stop.send(());
    };
    let (summary, ()) = tokio::join!(service, steps);
    let summary = summary.expect("the service stopped cleanly");

    let predicted = predictions();
    assert_eq!(predicted.len(), texts.len());
    assert!(predicted
        .iter()
        .all(|p| p.source == gorag::events::Source::Graph));
    let said = |reason: &str| {
        predicted
            .iter()
            .filter(|p| {
                p.llm_error
                    .as_deref()
                    .is_some_and(|e| e.starts_with(&format!("{reason}: ")))
            })
            .count()
    };
    assert_eq!(said("oversized_response"), HUGE_ANSWERS, "{predicted:?}");
    let skipped = said("breaker_open");
    assert!(skipped > 0, "{predicted:?}");
    assert_eq!(
        said("oversized_response") + said("server_error") + skipped,
        texts.len(),
        "every text says why the LLM did not decide it"
    );
    // The skipped texts were never sent.
    assert_eq!(fake.requests().len(), texts.len() - skipped);
    assert_eq!(summary.llm_fallbacks as usize, texts.len());
}
