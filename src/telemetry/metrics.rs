//! Prometheus metrics of the service (exposed on the admin port's `/metrics`).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabel {
    pub reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabel {
    pub kind: String,
}

/// The confidence buckets corrections are counted in.
pub const CONFIDENCE_BUCKETS: [&str; 4] = ["0-0.5", "0.5-0.8", "0.8-0.9", "0.9-1"];

/// A correction: whether gorag's own decision for the text agreed with it, and that
/// decision's confidence bucket ([`CONFIDENCE_BUCKETS`]).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CorrectionLabel {
    pub agreed: String,
    pub confidence: String,
}

/// A prediction: where its label came from (`llm`, `graph`) and its status (`decided`,
/// `needs_review`, `no_match`): decided over all is the live coverage.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PredictionLabel {
    pub source: String,
    pub status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ParamLabel {
    pub param: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StageLabel {
    pub stage: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PartitionLabel {
    pub partition: i32,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StateLabel {
    pub state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabel {
    pub outcome: String,
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

fn latency_histogram() -> Histogram {
    // 0.1 ms … ≈ 105 s
    Histogram::new(exponential_buckets(0.0001, 2.0, 21))
}

/// The hallucination kinds counted (`HallucinationKind`'s names; a test there keeps them equal).
pub const HALLUCINATION_KINDS: [&str; 2] = ["unknown_label", "outside_candidates"];

/// The LLM breaker's states, closed first (`BreakerState`'s names; a test there keeps them equal).
pub const BREAKER_STATES: [&str; 3] = ["closed", "open", "half_open"];

/// What an LLM client has counted since it started, as the metrics take it (the llm module
/// converts its own snapshot): telemetry knows no domain type, so it sits below every module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LlmCounts {
    pub calls: u64,
    pub retries: u64,
    pub failures: u64,
    pub oversized: u64,
    pub breaker_skipped: u64,
    pub breaker_openings: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// One of [`BREAKER_STATES`].
    pub breaker: &'static str,
}

impl Default for LlmCounts {
    fn default() -> Self {
        Self {
            calls: 0,
            retries: 0,
            failures: 0,
            oversized: 0,
            breaker_skipped: 0,
            breaker_openings: 0,
            prompt_tokens: 0,
            completion_tokens: 0,
            breaker: BREAKER_STATES[0],
        }
    }
}

pub struct Metrics {
    registry: Registry,
    pub texts_received: Counter,
    pub predictions: Family<PredictionLabel, Counter>,
    pub dead_letters: Family<ReasonLabel, Counter>,
    pub hallucinations: Family<KindLabel, Counter>,
    pub llm_fallbacks: Counter,
    pub label_events: Counter,
    pub corrections: Family<CorrectionLabel, Counter>,
    pub llm_calls: Counter,
    pub llm_retries: Counter,
    pub llm_failures: Counter,
    pub llm_tokens: Family<KindLabel, Counter>,
    pub llm_seconds: Histogram,
    /// LLM responses past `llm.max_response_bytes`.
    pub llm_oversized: Counter,
    /// The circuit breaker's state: 1 on the current one (closed, open, half_open).
    pub llm_breaker_state: Family<StateLabel, Gauge>,
    pub llm_breaker_skipped: Counter,
    pub llm_breaker_openings: Counter,
    pub stage_seconds: HistogramFamily<StageLabel>,
    pub consumer_lag: Family<PartitionLabel, Gauge>,
    pub in_flight: Gauge,
    pub graph_nodes: Gauge,
    pub graph_edges: Gauge,
    /// Distinct phrases in the keyword statistics (bounded by `engine.phrase_capacity`).
    pub keyword_phrases: Gauge,
    pub labels: Family<StateLabel, Gauge>,
    /// Labelled outcomes the confidence is refitted on, and the recalibration they give.
    pub confidence_outcomes: Gauge,
    pub confidence_recalibration: Family<ParamLabel, Gauge<f64, AtomicU64>>,
    pub discovery_pool: Gauge,
    pub discovery_passes: Family<OutcomeLabel, Counter>,
    pub proposals_published: Counter,
    pub proposals: Family<StateLabel, Gauge>,
    /// Communities the last pass found, by what became of them.
    pub pass_communities: Family<ReasonLabel, Gauge>,
    last_usage: std::sync::Mutex<LlmCounts>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("gorag");
        let m = Self {
            texts_received: Counter::default(),
            predictions: Family::default(),
            dead_letters: Family::default(),
            hallucinations: Family::default(),
            llm_fallbacks: Counter::default(),
            label_events: Counter::default(),
            corrections: Family::default(),
            llm_calls: Counter::default(),
            llm_retries: Counter::default(),
            llm_failures: Counter::default(),
            llm_tokens: Family::default(),
            llm_seconds: latency_histogram(),
            llm_oversized: Counter::default(),
            llm_breaker_state: Family::default(),
            llm_breaker_skipped: Counter::default(),
            llm_breaker_openings: Counter::default(),
            stage_seconds: Family::new_with_constructor(latency_histogram),
            consumer_lag: Family::default(),
            in_flight: Gauge::default(),
            graph_nodes: Gauge::default(),
            graph_edges: Gauge::default(),
            keyword_phrases: Gauge::default(),
            labels: Family::default(),
            confidence_outcomes: Gauge::default(),
            confidence_recalibration: Family::default(),
            discovery_pool: Gauge::default(),
            discovery_passes: Family::default(),
            proposals_published: Counter::default(),
            proposals: Family::default(),
            pass_communities: Family::default(),
            last_usage: std::sync::Mutex::new(LlmCounts::default()),
            registry: Registry::default(),
        };
        m.register_stream(&mut registry);
        m.register_llm(&mut registry);
        m.register_state(&mut registry);
        m.register_discovery(&mut registry);
        m.zero_known_series();
        Self { registry, ..m }
    }

    /// Records read and written, and the per-text path's timing.
    fn register_stream(&self, registry: &mut Registry) {
        let r = registry;
        r.register(
            "texts_received",
            "Records read from the texts topic",
            self.texts_received.clone(),
        );
        r.register(
            "predictions",
            "Predictions published, by source (llm or graph) and status (decided, needs_review or no_match)",
            self.predictions.clone(),
        );
        r.register(
            "dead_letters",
            "Records sent to the dead-letter topic, by reason",
            self.dead_letters.clone(),
        );
        r.register(
            "label_events",
            "Records read from the labels topic",
            self.label_events.clone(),
        );
        r.register(
            "corrections",
            "Corrections applied, by whether gorag's own decision for the text agreed and its \
             confidence bucket (0-0.5, 0.5-0.8, 0.8-0.9, 0.9-1)",
            self.corrections.clone(),
        );
        r.register(
            "stage_seconds",
            "Per-stage latency of a text",
            self.stage_seconds.clone(),
        );
        r.register(
            "consumer_lag",
            "Texts-topic records not yet read, by partition",
            self.consumer_lag.clone(),
        );
        r.register(
            "in_flight",
            "Texts taken in and not yet finished",
            self.in_flight.clone(),
        );
    }

    /// The LLM client: requests, retries, tokens, latency, and what its answers were.
    fn register_llm(&self, registry: &mut Registry) {
        let r = registry;
        r.register(
            "hallucinations",
            "LLM answers flagged, by kind",
            self.hallucinations.clone(),
        );
        r.register(
            "llm_fallbacks",
            "Texts predicted from the graph because the LLM failed",
            self.llm_fallbacks.clone(),
        );
        r.register(
            "llm_calls",
            "LLM requests (each may take several attempts)",
            self.llm_calls.clone(),
        );
        r.register(
            "llm_retries",
            "LLM attempts retried",
            self.llm_retries.clone(),
        );
        r.register(
            "llm_failures",
            "LLM requests that failed after every retry",
            self.llm_failures.clone(),
        );
        r.register(
            "llm_tokens",
            "LLM tokens, by kind (prompt or completion)",
            self.llm_tokens.clone(),
        );
        r.register(
            "llm_request_seconds",
            "LLM request latency, retries included",
            self.llm_seconds.clone(),
        );
        r.register(
            "llm_oversized_responses",
            "LLM responses larger than llm.max_response_bytes (read no further; the call failed)",
            self.llm_oversized.clone(),
        );
        r.register(
            "llm_breaker_state",
            "The LLM circuit breaker's state: 1 on the current one (closed, open or half_open)",
            self.llm_breaker_state.clone(),
        );
        r.register(
            "llm_breaker_skipped_calls",
            "LLM calls not sent because the circuit breaker was open (the texts decided by \
             retrieval)",
            self.llm_breaker_skipped.clone(),
        );
        r.register(
            "llm_breaker_openings",
            "Times the LLM circuit breaker opened",
            self.llm_breaker_openings.clone(),
        );
    }

    /// The engine's state: graph size and labels.
    fn register_state(&self, registry: &mut Registry) {
        let r = registry;
        r.register(
            "graph_nodes",
            "Keyword-label graph nodes",
            self.graph_nodes.clone(),
        );
        r.register(
            "graph_edges",
            "Keyword-label graph edges",
            self.graph_edges.clone(),
        );
        r.register(
            "keyword_phrases",
            "Distinct phrases in the keyword statistics (the rarest forgotten past engine.phrase_capacity)",
            self.keyword_phrases.clone(),
        );
        r.register(
            "labels",
            "Labels, by state (active or retired)",
            self.labels.clone(),
        );
        r.register(
            "confidence_outcomes",
            "Labelled outcomes the confidence is refitted on (examples of labels with several, \
             audited corrections)",
            self.confidence_outcomes.clone(),
        );
        r.register(
            "confidence_recalibration",
            "The refit's recalibration of the calibrator's log-odds: confidence = \
             sigmoid(shift + scale * log-odds)",
            self.confidence_recalibration.clone(),
        );
    }

    /// Emerging-class discovery: the pool, community passes and proposals.
    fn register_discovery(&self, registry: &mut Registry) {
        let r = registry;
        r.register(
            "discovery_pool_texts",
            "Poorly explained texts pooled for emerging-class discovery",
            self.discovery_pool.clone(),
        );
        r.register(
            "discovery_passes",
            "Community passes over the pool, by outcome (ok or failed)",
            self.discovery_passes.clone(),
        );
        r.register(
            "proposals_published",
            "Proposal events published (new proposals and revisions)",
            self.proposals_published.clone(),
        );
        r.register(
            "proposals",
            "Proposals on the proposals topic at the last pass, by status",
            self.proposals.clone(),
        );
        r.register(
            "discovery_pass_communities",
            "Communities the last pass found, by outcome: kept (proposed, or matching a decided \
             proposal), or left out as too_small, \
             loose (below min_cohesion) or explained (max_community_score)",
            self.pass_communities.clone(),
        );
    }

    /// Series whose label values are known in advance start at zero, so a query (or a
    /// dashboard panel) finds them before the first event of their kind.
    fn zero_known_series(&self) {
        for kind in HALLUCINATION_KINDS {
            drop(
                self.hallucinations
                    .get_or_create(&KindLabel { kind: kind.into() }),
            );
        }
        for kind in ["prompt", "completion"] {
            drop(
                self.llm_tokens
                    .get_or_create(&KindLabel { kind: kind.into() }),
            );
        }
        self.set_breaker_state(BREAKER_STATES[0]);
        for outcome in ["ok", "failed"] {
            drop(self.discovery_passes.get_or_create(&OutcomeLabel {
                outcome: outcome.into(),
            }));
        }
        for reason in ["kept", "too_small", "loose", "explained"] {
            drop(self.pass_communities.get_or_create(&ReasonLabel {
                reason: reason.into(),
            }));
        }
        for state in ["open", "accepted", "rejected", "withdrawn"] {
            drop(self.proposals.get_or_create(&StateLabel {
                state: state.into(),
            }));
        }
        for agreed in ["true", "false"] {
            for confidence in CONFIDENCE_BUCKETS {
                drop(self.corrections.get_or_create(&CorrectionLabel {
                    agreed: agreed.into(),
                    confidence: confidence.into(),
                }));
            }
        }
    }

    pub fn observe_stage(&self, stage: &str, seconds: f64) {
        self.stage_seconds
            .get_or_create(&StageLabel {
                stage: stage.to_string(),
            })
            .observe(seconds);
    }

    pub fn dead_letter(&self, reason: &str) {
        self.dead_letters
            .get_or_create(&ReasonLabel {
                reason: reason.to_string(),
            })
            .inc();
    }

    /// 1 on the breaker's current state, 0 on the others.
    fn set_breaker_state(&self, current: &str) {
        for state in BREAKER_STATES {
            self.llm_breaker_state
                .get_or_create(&StateLabel {
                    state: state.into(),
                })
                .set(i64::from(state == current));
        }
    }

    /// Move the LLM counters forward by what the client counted since the last call.
    pub fn llm_usage(&self, now: LlmCounts) {
        let Ok(mut last) = self.last_usage.lock() else {
            return;
        };
        self.llm_calls.inc_by(now.calls.saturating_sub(last.calls));
        self.llm_retries
            .inc_by(now.retries.saturating_sub(last.retries));
        self.llm_failures
            .inc_by(now.failures.saturating_sub(last.failures));
        self.llm_oversized
            .inc_by(now.oversized.saturating_sub(last.oversized));
        self.llm_breaker_skipped
            .inc_by(now.breaker_skipped.saturating_sub(last.breaker_skipped));
        self.llm_breaker_openings
            .inc_by(now.breaker_openings.saturating_sub(last.breaker_openings));
        self.set_breaker_state(now.breaker);
        for (kind, now, before) in [
            ("prompt", now.prompt_tokens, last.prompt_tokens),
            ("completion", now.completion_tokens, last.completion_tokens),
        ] {
            self.llm_tokens
                .get_or_create(&KindLabel { kind: kind.into() })
                .inc_by(now.saturating_sub(before));
        }
        *last = now;
    }

    /// The OpenMetrics text exposition.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        if prometheus_client::encoding::text::encode(&mut text, &self.registry).is_err() {
            text.clear();
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_metric_is_registered_once() {
        let metrics = Metrics::new();
        // Families without a series are not encoded: give the others one each.
        metrics
            .predictions
            .get_or_create(&PredictionLabel {
                source: "graph".into(),
                status: "decided".into(),
            })
            .inc();
        metrics.dead_letter("bad_json");
        metrics.observe_stage("retrieve", 0.001);
        metrics
            .consumer_lag
            .get_or_create(&PartitionLabel { partition: 0 })
            .set(0);
        metrics
            .labels
            .get_or_create(&StateLabel {
                state: "active".into(),
            })
            .set(1);
        metrics
            .confidence_recalibration
            .get_or_create(&ParamLabel {
                param: "shift".into(),
            })
            .set(0.0);
        let text = metrics.encode();
        let names = [
            "texts_received",
            "predictions",
            "dead_letters",
            "hallucinations",
            "llm_fallbacks",
            "label_events",
            "corrections",
            "llm_calls",
            "llm_retries",
            "llm_failures",
            "llm_tokens",
            "llm_request_seconds",
            "llm_oversized_responses",
            "llm_breaker_state",
            "llm_breaker_skipped_calls",
            "llm_breaker_openings",
            "stage_seconds",
            "consumer_lag",
            "in_flight",
            "graph_nodes",
            "graph_edges",
            "keyword_phrases",
            "labels",
            "confidence_outcomes",
            "confidence_recalibration",
            "discovery_pool_texts",
            "discovery_passes",
            "proposals_published",
            "proposals",
            "discovery_pass_communities",
        ];
        let helps: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# HELP gorag_"))
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        for name in names {
            let found = helps
                .iter()
                .filter(|h| h.trim_end_matches("_total") == name)
                .count();
            assert_eq!(found, 1, "{name} in {helps:?}");
        }
        assert_eq!(helps.len(), names.len(), "{helps:?}");
        // Known series start at zero.
        assert!(text.contains("gorag_hallucinations_total{kind=\"unknown_label\"} 0"));
        assert!(text.contains("gorag_proposals{state=\"open\"} 0"));
        assert!(text.contains("gorag_llm_breaker_state{state=\"closed\"} 1"));
        assert!(text.contains("gorag_llm_breaker_state{state=\"open\"} 0"));
    }

    #[test]
    fn the_llm_usage_moves_the_bounds_counters_and_the_breaker_gauge() {
        let metrics = Metrics::new();
        metrics.llm_usage(LlmCounts {
            oversized: 2,
            breaker_skipped: 7,
            breaker_openings: 1,
            breaker: "open",
            ..LlmCounts::default()
        });
        metrics.llm_usage(LlmCounts {
            oversized: 3,
            breaker_skipped: 9,
            breaker_openings: 1,
            breaker: "half_open",
            ..LlmCounts::default()
        });
        let text = metrics.encode();
        for line in [
            "gorag_llm_oversized_responses_total 3",
            "gorag_llm_breaker_skipped_calls_total 9",
            "gorag_llm_breaker_openings_total 1",
            "gorag_llm_breaker_state{state=\"half_open\"} 1",
            "gorag_llm_breaker_state{state=\"open\"} 0",
            "gorag_llm_breaker_state{state=\"closed\"} 0",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in:\n{text}");
        }
        assert!(text.contains("gorag_corrections_total{agreed=\"false\",confidence=\"0.9-1\"} 0"));
    }
}
