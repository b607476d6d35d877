//! `gorag eval --discover`'s output for people: the reports side by side, the signals, and
//! each report's proposals.

use std::fmt::Write;

use super::{DiscoveryReport, RECOVERY_PURITY};

/// The reports side by side, then each one's proposals.
pub fn table(reports: &[DiscoveryReport]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| strategy | held round | known / held labels | held texts pooled | pool from held classes | weak-score AUC | proposals | recovered (purity ≥ {RECOVERY_PURITY}) | mean purity | members from known classes | accuracy after accepting | with the true examples | pass |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for r in reports {
        let _ = writeln!(
            out,
            "| {} | {} | {} / {} | {} / {} | {:.2} | {:.3} | {} | {} ({:.2}) | {:.2} | {:.2} | {:.3} | {:.3} | {:.2} s |",
            r.strategy,
            r.held_round,
            r.known_labels,
            r.held_labels,
            r.pooled_held,
            r.streamed_held,
            r.pooled_held as f64 / r.pooled.max(1) as f64,
            r.weak_score_auc,
            r.proposals.len(),
            r.recovered,
            r.recovered_share,
            r.mean_purity,
            r.known_member_share,
            r.accepted_accuracy,
            r.true_examples_accuracy,
            r.pass_seconds,
        );
    }
    for r in reports {
        let _ = writeln!(
            out,
            "\n{}: the pool holds {} texts in about {} KB ({} bytes a text)",
            r.strategy,
            r.pooled,
            r.pool_bytes.div_ceil(1024),
            r.pool_bytes / r.pooled.max(1),
        );
    }
    signal_table(&mut out, reports);
    for r in reports {
        let _ = writeln!(
            out,
            "\n{} proposals (size, purity, cohesion, majority):",
            r.strategy
        );
        for p in &r.proposals {
            let _ = writeln!(
                out,
                "  {:>4}  {:.2}  {:.2}  {}{}  ← \"{}\"",
                p.size,
                p.purity,
                p.cohesion,
                p.majority,
                if p.majority_held { " (held back)" } else { "" },
                p.name
            );
        }
    }
    out
}

/// Each signal's share of held-back texts and of known texts (`held / known`).
fn signal_table(out: &mut String, reports: &[DiscoveryReport]) {
    let _ = writeln!(
        out,
        "\nsignals, as the share of held-back / known texts they fired on:\n\n| strategy | texts | LLM: unknown label | no evidence | weak score | probe's doubt | pooled | held for a proposal | learned from | published decided | needs review | no match |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|---|---|");
    let share = |n: usize, of: usize| n as f64 / of.max(1) as f64;
    for r in reports {
        let (h, k) = (&r.signals.held, &r.signals.known);
        let cell =
            |hn: usize, kn: usize| format!("{:.3} / {:.3}", share(hn, h.texts), share(kn, k.texts));
        let _ = writeln!(
            out,
            "| {} | {} / {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.strategy,
            h.texts,
            k.texts,
            cell(h.unknown_label, k.unknown_label),
            cell(h.no_evidence, k.no_evidence),
            cell(h.weak_score, k.weak_score),
            cell(h.doubt, k.doubt),
            cell(h.pooled, k.pooled),
            cell(h.held_for_proposal, k.held_for_proposal),
            cell(h.learned, k.learned),
            cell(h.decided, k.decided),
            cell(h.needs_review, k.needs_review),
            cell(h.no_match, k.no_match),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::{SignalCounts, Signals};
    use super::*;

    #[test]
    fn the_signal_table_shows_each_share_of_held_back_and_known_texts() {
        let counts = |texts, unknown_label, weak_score, pooled, learned| SignalCounts {
            texts,
            unknown_label,
            no_evidence: 0,
            weak_score,
            doubt: 0,
            pooled,
            held_for_proposal: 0,
            learned,
            decided: learned,
            needs_review: 0,
            no_match: texts - learned,
        };
        let signals = Signals {
            held: counts(2, 1, 1, 1, 1),
            known: counts(1, 0, 0, 0, 1),
        };
        let table = table(&[report_with(signals)]);
        assert!(
            table.contains("| hybrid | 2 / 1 | 0.500 / 0.000 | 0.000 / 0.000 | 0.500 / 0.000 | 0.000 / 0.000 | 0.500 / 0.000 | 0.000 / 0.000 | 0.500 / 1.000 | 0.500 / 1.000 | 0.000 / 0.000 | 0.500 / 0.000 |"),
            "{table}"
        );
    }

    fn report_with(signals: Signals) -> DiscoveryReport {
        DiscoveryReport {
            strategy: "hybrid".into(),
            held_round: 2,
            known_labels: 1,
            held_labels: 1,
            streamed: 3,
            streamed_held: 2,
            pooled: 1,
            pooled_held: 1,
            pool_bytes: 500,
            weak_score_auc: 0.5,
            signals,
            proposals: Vec::new(),
            recovered: 0,
            recovered_share: 0.0,
            mean_purity: 0.0,
            known_member_share: 0.0,
            accepted_accuracy: 0.0,
            true_examples_accuracy: 0.0,
            pass_seconds: 0.0,
        }
    }
}
