//! A tiny two-round DFSTC stream against the real local LLM (started by `scripts/llm.sh start`,
//! which `scripts/test.sh` runs first). URL from $GORAG_TEST_LLM_URL, default
//! http://127.0.0.1:8080/v1. The model is small (Qwen2.5-Coder 0.5B), so the checks are: every
//! answer is well-formed, answers stay inside the candidates, and easy texts are mostly right.

use std::path::Path;
use std::time::Duration;

use gorag::engine::answer::HallucinationKind;
use gorag::engine::keywords::KeywordMode;
use gorag::engine::{Engine, EngineConfig, Source};
use gorag::eval::dataset;
use gorag::llm::{LlmClient, LlmConfig};
use gorag::one_text::TextSteps;

fn llm_url() -> String {
    std::env::var("GORAG_TEST_LLM_URL").unwrap_or_else(|_| "http://127.0.0.1:8080/v1".into())
}

async fn require_server(url: &str) {
    let health = url.trim_end_matches("/v1").to_string() + "/health";
    let ok = reqwest::Client::new()
        .get(&health)
        .timeout(Duration::from_secs(5))
        .send()
        .await
        .map(|r| r.status().is_success())
        .unwrap_or(false);
    assert!(
        ok,
        "no LLM server at {health}: run `scripts/llm.sh start` (scripts/test.sh does it)"
    );
}

#[tokio::test]
async fn two_round_stream_with_the_real_model() {
    let url = llm_url();
    require_server(&url).await;
    let mut config = LlmConfig::new(url.as_str(), "qwen2.5-coder-0.5b-instruct");
    // Generous: the server may share the two cores with a build.
    config.timeout = Duration::from_secs(180);
    let llm = LlmClient::new(config).expect("client");
    let classifier = TextSteps::new(Some(llm.clone()), KeywordMode::Tfidf);

    let rounds = dataset::load(Path::new("examples/tiny"), 1, None, dataset::HeldOut::Test)
        .expect("tiny dataset");
    assert_eq!(rounds.len(), 2);
    let mut engine = Engine::new(EngineConfig {
        // Every text is asked: these tests are about the LLM's answers.
        ask_below: 1.0,
        ..EngineConfig::default()
    });
    let (mut total, mut correct, mut inside) = (0, 0, 0);
    for round in &rounds {
        let mut labels = dataset::round_labels(round, true);
        let described = classifier.describe_labels(&mut labels, 2).await;
        assert_eq!(
            described as usize,
            labels.len(),
            "one description per named label"
        );
        for label in &labels {
            let description = label.description.as_deref().unwrap_or_default();
            assert!(
                !description.trim().is_empty(),
                "{} has a description",
                label.id
            );
        }
        engine.apply_round(None, &labels).expect("round applies");

        for sample in &round.test {
            let result = classifier
                .classify(&engine, &sample.text)
                .await
                .expect("classified");
            let raw = result.raw_answer.as_deref().expect("the model answered");
            assert!(
                !raw.trim().is_empty() && raw.len() < 400,
                "well-formed answer: {raw:?}"
            );
            assert!(result.llm_failure.is_none());
            assert!(
                engine
                    .labels()
                    .get(&result.decision.label)
                    .is_some_and(|l| l.active),
                "decision is an active label"
            );
            if result.decision.hallucination.is_none() {
                assert_eq!(result.decision.source, Source::Llm);
                assert!(result
                    .retrieval
                    .label_ids()
                    .contains(&result.decision.label));
                inside += 1;
            } else if result.decision.hallucination == Some(HallucinationKind::UnknownLabel) {
                // Scored mode still decides among the candidates (fused), flagged.
                assert!(result
                    .retrieval
                    .label_ids()
                    .contains(&result.decision.label));
            }
            // The default `scored` choice needs the endpoint's first-token alternatives.
            assert!(
                !result.alternatives.is_empty(),
                "llama.cpp's server returns top_logprobs"
            );
            total += 1;
            if result.decision.label == sample.label {
                correct += 1;
            }
            engine.learn(
                &result.analysis,
                &result.verdict.learn_as,
                result.verdict.confident,
            );
        }
    }
    assert_eq!(total, 18);
    // Round 2's labels must be reachable after round 2 arrives.
    assert!(engine.labels().get("finance").is_some_and(|l| l.active));
    assert!(
        inside * 10 >= total * 8,
        "{inside}/{total} answers inside the candidates"
    );
    assert!(
        correct * 10 >= total * 6,
        "{correct}/{total} easy texts right"
    );
    let usage = llm.usage().snapshot();
    assert!(usage.prompt_tokens > 0 && usage.failures == 0);
}
