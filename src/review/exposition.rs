//! The desk's `/metrics` in the OpenMetrics text format, from a snapshot of its state (a
//! handful of families: written out rather than kept in a registry beside the desk's own
//! counts).

use std::fmt::Write;

use std::sync::atomic::Ordering;

use super::access::LoginGuard;
use super::desk::Gauges;
use super::tally::{bucket_name, Agreement, Tally};

pub fn render(
    gauges: &Gauges,
    tally: &Tally,
    unreadable: u64,
    ready: bool,
    logins: &LoginGuard,
) -> String {
    let mut out = String::new();
    let mut family = |name: &str, kind: &str, help: &str, samples: &[(String, f64)]| {
        let _ = writeln!(out, "# TYPE {name} {kind}");
        let _ = writeln!(out, "# HELP {name} {help}");
        let suffix = if kind == "counter" { "_total" } else { "" };
        for (labels, value) in samples {
            let _ = writeln!(out, "{name}{suffix}{labels} {value}");
        }
    };
    let one = |value: f64| vec![(String::new(), value)];
    family(
        "gorag_review_ready",
        "gauge",
        "1 once the desk has read its topics to where they ended at its start.",
        &one(f64::from(u8::from(ready))),
    );
    family(
        "gorag_review_queue_depth",
        "gauge",
        "Items waiting for a reviewer (held ones included).",
        &one(gauges.depth as f64),
    );
    family(
        "gorag_review_oldest_item_age_seconds",
        "gauge",
        "How long the oldest waiting item has waited.",
        &one(gauges.oldest_age_ms as f64 / 1000.0),
    );
    family(
        "gorag_review_waiting_for_text",
        "gauge",
        "Predictions to review whose text has not been read yet.",
        &one(gauges.waiting_for_text as f64),
    );
    family(
        "gorag_review_not_queued",
        "counter",
        "Items not queued because the queue was full (queued at the desk's next start).",
        &one(tally.not_queued as f64),
    );
    family(
        "gorag_review_unreadable_records",
        "counter",
        "Records of the desk's topics that were not the event expected (skipped).",
        &one(unreadable as f64),
    );
    let by_bucket = |rows: [(&str, &[Agreement]); 2], agreed: bool| {
        let mut samples = Vec::new();
        for (kind, row) in rows {
            for (bucket, counts) in row.iter().enumerate() {
                let value = if agreed {
                    counts.agreed
                } else {
                    counts.answers
                };
                samples.push((
                    format!("{{kind=\"{kind}\",confidence=\"{}\"}}", bucket_name(bucket)),
                    value as f64,
                ));
            }
        }
        samples
    };
    let rows = [("review", &tally.review[..]), ("audit", &tally.audit[..])];
    family(
        "gorag_review_answers",
        "counter",
        "Texts answered, by why they were shown and by gorag's confidence.",
        &by_bucket(rows, false),
    );
    family(
        "gorag_review_agreed",
        "counter",
        "Answered texts whose reviewer gave gorag's own label, by kind and confidence: \
         agreed / answers is the live calibration check.",
        &by_bucket(rows, true),
    );
    family(
        "gorag_review_proposals_answered",
        "counter",
        "Proposals accepted or rejected at the desk.",
        &one(tally.proposals_answered as f64),
    );
    family(
        "gorag_review_login_failures",
        "counter",
        "Wrong tokens tried (at login, or as a bearer or basic token).",
        &one(logins.failed.load(Ordering::Relaxed) as f64),
    );
    family(
        "gorag_review_logins_throttled",
        "counter",
        "Token checks refused unchecked: their address had tried too many wrong tokens.",
        &one(logins.throttled.load(Ordering::Relaxed) as f64),
    );
    out.push_str("# EOF\n");
    out
}
