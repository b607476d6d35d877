//! The service's instruments: every metric family, made and registered here, and moved only
//! by an [`InternalEvent`](super::event::InternalEvent)'s `emit`, to which
//! [`Metrics::emit`](super::metrics::Metrics::emit) lends them.

use std::sync::atomic::AtomicU64;
use std::sync::Mutex;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use super::labels::*;

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

fn latency_histogram() -> Histogram {
    // 0.1 ms … ≈ 105 s
    Histogram::new(exponential_buckets(0.0001, 2.0, 21))
}

/// Every metric family of the service. Made only by [`Metrics::new`] and lent only to an
/// event's [`InternalEvent::emit`].
pub struct Instruments {
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
    pub discovery_pool_bytes: Gauge,
    pub discovery_passes: Family<OutcomeLabel, Counter>,
    pub proposals_published: Counter,
    /// Texts held for review because they read like an open proposal.
    pub texts_held_for_proposal: Counter,
    pub proposals: Family<StateLabel, Gauge>,
    /// Communities the last pass found, by what became of them.
    pub pass_communities: Family<ReasonLabel, Gauge>,
    /// The LLM client's counts at the last sample: its counters move by the difference.
    last_llm_usage: Mutex<LlmCounts>,
}

impl Instruments {
    pub(super) fn new() -> Self {
        Self {
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
            discovery_pool_bytes: Gauge::default(),
            discovery_passes: Family::default(),
            proposals_published: Counter::default(),
            texts_held_for_proposal: Counter::default(),
            proposals: Family::default(),
            pass_communities: Family::default(),
            last_llm_usage: Mutex::new(LlmCounts::default()),
        }
    }

    /// What the LLM client counted since the last sample (`now`'s breaker state), `now` kept
    /// for the next: its counters are the client's own, sampled on the service's tick.
    pub fn llm_usage_since_last(&self, now: LlmCounts) -> LlmCounts {
        let mut last = self
            .last_llm_usage
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let since = LlmCounts {
            calls: now.calls.saturating_sub(last.calls),
            retries: now.retries.saturating_sub(last.retries),
            failures: now.failures.saturating_sub(last.failures),
            oversized: now.oversized.saturating_sub(last.oversized),
            breaker_skipped: now.breaker_skipped.saturating_sub(last.breaker_skipped),
            breaker_openings: now.breaker_openings.saturating_sub(last.breaker_openings),
            prompt_tokens: now.prompt_tokens.saturating_sub(last.prompt_tokens),
            completion_tokens: now.completion_tokens.saturating_sub(last.completion_tokens),
            breaker: now.breaker,
        };
        *last = now;
        since
    }

    /// Records read and written, and the per-text path's timing.
    pub(super) fn register_stream(&self, registry: &mut Registry) {
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
    pub(super) fn register_llm(&self, registry: &mut Registry) {
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
    pub(super) fn register_state(&self, registry: &mut Registry) {
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
    pub(super) fn register_discovery(&self, registry: &mut Registry) {
        let r = registry;
        r.register(
            "discovery_pool_texts",
            "Poorly explained texts pooled for emerging-class discovery",
            self.discovery_pool.clone(),
        );
        r.register(
            "discovery_pool_bytes",
            "Bytes the discovery pool's texts hold, approximately (their strings and lists, \
             without the allocator's overhead)",
            self.discovery_pool_bytes.clone(),
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
            "texts_held_for_proposal",
            "Texts published needing review because they read like an open proposal",
            self.texts_held_for_proposal.clone(),
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
    pub(super) fn zero_known_series(&self) {
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
        for state in BREAKER_STATES {
            self.llm_breaker_state
                .get_or_create(&StateLabel {
                    state: state.into(),
                })
                .set(i64::from(state == BREAKER_STATES[0]));
        }
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::metrics::Metrics;

    #[test]
    fn every_metric_is_registered_once() {
        let metrics = Metrics::new();
        let instruments = metrics.instruments();
        // Families without a series are not encoded: give the others one each.
        instruments
            .predictions
            .get_or_create(&PredictionLabel {
                source: "graph".into(),
                status: "decided".into(),
            })
            .inc();
        instruments
            .dead_letters
            .get_or_create(&ReasonLabel {
                reason: "bad_json".into(),
            })
            .inc();
        instruments
            .stage_seconds
            .get_or_create(&StageLabel {
                stage: "retrieve".into(),
            })
            .observe(0.001);
        instruments
            .consumer_lag
            .get_or_create(&PartitionLabel { partition: 0 })
            .set(0);
        instruments
            .labels
            .get_or_create(&StateLabel {
                state: "active".into(),
            })
            .set(1);
        instruments
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
            "discovery_pool_bytes",
            "discovery_passes",
            "proposals_published",
            "texts_held_for_proposal",
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
        assert!(text.contains("gorag_corrections_total{agreed=\"false\",confidence=\"0.9-1\"} 0"));
    }

    #[test]
    fn the_llm_usage_is_counted_by_difference() {
        let instruments = Instruments::new();
        let counts = |calls, breaker| LlmCounts {
            calls,
            breaker,
            ..LlmCounts::default()
        };
        assert_eq!(
            instruments.llm_usage_since_last(counts(3, "open")),
            counts(3, "open")
        );
        assert_eq!(
            instruments.llm_usage_since_last(counts(5, "closed")),
            counts(2, "closed")
        );
        // A client started again counts from zero: nothing goes backwards.
        assert_eq!(
            instruments.llm_usage_since_last(counts(1, "closed")),
            counts(0, "closed")
        );
    }
}
