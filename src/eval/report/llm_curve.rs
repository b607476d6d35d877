//! What `gorag eval --ask-below 1` prints and writes of the LLM's curve: accuracy against calls
//! for each weight and threshold, and the chosen setting as configuration.

use std::fmt::Write as _;

use super::EvalReport;

/// When the LLM was asked about every text: the settings that beat retrieval alone (and the
/// chosen one) for each strategy.
pub(super) fn llm_curve_rows(report: &EvalReport) -> String {
    let mut out = String::new();
    for run in &report.runs {
        let Some(chosen) = run.llm_choice else {
            continue;
        };
        let _ = writeln!(
            out,
            "{}: accuracy (mean over rounds) against LLM calls per text, by weight × ask_below; retrieval alone {:.4}",
            run.strategy,
            crate::eval::mean_or_zero(run.rounds.iter().map(|m| m.graph_accuracy)),
        );
        let settings = run.rounds.first().map_or(0, |m| m.llm_curve.len());
        for i in 0..settings {
            let points: Vec<_> = run
                .rounds
                .iter()
                .filter_map(|m| m.llm_curve.get(i))
                .collect();
            let Some(first) = points.first() else {
                continue;
            };
            let _ = writeln!(
                out,
                "  weight {:>7} ask_below {:.1}: accuracy {:.4} at {:.2} calls/text",
                if first.llm_weight >= 1e5 {
                    "llm".to_string()
                } else {
                    format!("{:.2}", first.llm_weight)
                },
                first.ask_below,
                crate::eval::mean_or_zero(points.iter().map(|p| p.accuracy)),
                crate::eval::mean_or_zero(points.iter().map(|p| p.calls_per_text)),
            );
        }
        let _ = writeln!(
            out,
            "  chosen: llm_weight {} ask_below {:.1} (accuracy {:.4} at {:.2} calls/text){}",
            chosen.llm_weight,
            chosen.ask_below,
            chosen.accuracy,
            chosen.calls_per_text,
            if chosen.ask_below == 0.0 {
                " — this endpoint does not beat retrieval alone: not asked"
            } else {
                ""
            },
        );
    }
    out
}

/// The chosen LLM settings of the first strategy that has them, as configuration lines for
/// `gorag serve`.
pub fn llm_calibration_toml(report: &EvalReport) -> Option<String> {
    let (run, chosen) = report
        .runs
        .iter()
        .find_map(|run| run.llm_choice.map(|c| (run, c)))?;
    Some(format!(
        "# Chosen by `gorag eval --ask-below 1` on {} ({}-shot, {} texts, strategy {}, model {}):\n\
         # mean accuracy {:.4} at {:.2} LLM calls per text.\n\
         [llm]\nask_below = {}\n\n[engine]\nchoice = \"scored\"\nllm_weight = {}\n",
        report.dataset,
        report.shots,
        report.held_out,
        run.strategy,
        report.model,
        chosen.accuracy,
        chosen.calls_per_text,
        chosen.ask_below,
        chosen.llm_weight,
    ))
}
