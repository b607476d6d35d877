//! Evaluation output: a table for people, JSON for scripts, an SVG plot of accuracy per round.

use std::fmt::Write as _;

use serde::Serialize;

use super::{RoundMetrics, StrategyRun};
use crate::llm::UsageSnapshot;

mod confidence;
mod llm_curve;

pub use confidence::confidence_svg;
pub use llm_curve::llm_calibration_toml;
use llm_curve::llm_curve_rows;

#[derive(Debug, Clone, Serialize)]
pub struct EvalReport {
    pub dataset: String,
    pub shots: u32,
    /// Held-out texts per round (None: all).
    pub limit: Option<usize>,
    pub seed: u64,
    /// Order of each round's held-out texts: `file` or `shuffled` (with `seed`).
    pub order: String,
    /// `none` for retrieval-only runs.
    pub model: String,
    pub keyword_mode: String,
    /// How the LLM chose (`free`, `numbered`, `scored`).
    pub choice: String,
    /// `test` or `dev`.
    pub held_out: String,
    pub named_labels: bool,
    /// The embedding signal's model (its name, or its folder's last component) when a compared
    /// strategy read it; None when off.
    pub embedding_model: Option<String>,
    pub ablations: Vec<String>,
    pub runs: Vec<StrategyRun>,
    pub llm_usage: Option<UsageSnapshot>,
}

/// A fixed-width table, one row per strategy and round.
pub fn table(report: &EvalReport) -> String {
    let mut out = heading(report);
    out.push_str(&rows(report));
    out.push_str(&calibration_rows(report));
    out.push_str(&out_of_scope_rows(report));
    out.push_str(&llm_curve_rows(report));
    for run in &report.runs {
        for m in &run.rounds {
            out.push_str(&round_details(&run.strategy, m));
        }
    }
    out
}

/// The run's settings on one line.
fn heading(report: &EvalReport) -> String {
    format!(
        "dataset {} · {}-shot · {} texts · model {} · choice {} · keywords {}{}{}{}{}\n",
        report.dataset,
        report.shots,
        report.held_out,
        report.model,
        report.choice,
        report.keyword_mode,
        report
            .embedding_model
            .as_ref()
            .map(|m| format!(" · embedding {m}"))
            .unwrap_or_default(),
        report
            .limit
            .map(|l| format!(" · {l} texts/round (seed {})", report.seed))
            .unwrap_or_default(),
        if report.order == "shuffled" {
            format!(" · shuffled (seed {})", report.seed)
        } else {
            String::new()
        },
        if report.ablations.is_empty() {
            String::new()
        } else {
            format!(" · ablations {}", report.ablations.join(","))
        },
    )
}

/// One row per strategy and round, then the columns' legend.
fn rows(report: &EvalReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<9} {:>2} {:>4} {:>6} {:>7} {:>7} {:>7} {:>7} {:>7} {:>8} {:>8} {:>7} {:>6} {:>7} {:>8} {:>7} {:>7} {:>8}",
        "strategy",
        "r",
        "lbls",
        "texts",
        "acc",
        "gacc",
        "strict",
        "nomatch",
        "mrec",
        "halluc",
        "candrec",
        "cands",
        "learned",
        "calls/t",
        "ptok/t",
        "nodes",
        "edges",
        "time",
    );
    for run in &report.runs {
        for m in &run.rounds {
            let _ = writeln!(
                out,
                "{:<9} {:>2} {:>4} {:>6} {:>7.4} {:>7.4} {:>7.4} {:>7.4} {:>7.4} {:>8.4} {:>8.4} {:>7.2} {:>6} {:>7.2} {:>8.1} {:>7} {:>7} {:>7.1}s",
                run.strategy,
                m.round,
                m.labels,
                m.texts,
                m.accuracy,
                m.graph_accuracy,
                m.strict_accuracy,
                m.no_match_share,
                m.macro_recall,
                m.hallucination_rate,
                m.candidate_recall,
                m.mean_candidates,
                m.learned,
                m.llm_calls_per_text,
                m.prompt_tokens_per_text,
                m.graph_nodes,
                m.graph_edges,
                m.seconds.total,
            );
        }
    }
    let _ = writeln!(
        out,
        "acc: final label correct (a text published with no label counts wrong) · gacc: retrieval's own prediction correct · strict: unknown-label answers count wrong (the paper's rule) · \
         nomatch: share published with no label · mrec: macro recall · halluc: unknown_label + outside_candidates · candrec: gold label among \
         the candidates · cands: mean candidate-set size · learned: this round's texts learned from · ptok/t: prompt tokens per text"
    );
    out
}

/// Per strategy and round: how well confidence is calibrated and how well it ranks.
fn calibration_rows(report: &EvalReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<9} {:>2} {:>6} {:>7} {:>7} {:>7} {:>7} {:>8}",
        "strategy", "r", "conf", "ece", "acc@50", "acc@80", "acc@90", "cov@.9"
    );
    for run in &report.runs {
        for m in &run.rounds {
            let c = &m.calibration;
            let at = |i: usize| c.accuracy_at.get(i).map_or(0.0, |&(_, a)| a);
            let _ = writeln!(
                out,
                "{:<9} {:>2} {:>6.3} {:>7.4} {:>7.4} {:>7.4} {:>7.4} {:>8.4}",
                run.strategy,
                m.round,
                c.mean_confidence,
                c.ece,
                at(0),
                at(1),
                at(2),
                c.coverage_at_target,
            );
        }
    }
    let _ = writeln!(
        out,
        "conf: mean confidence · ece: expected calibration error (10 equal-width bins) · acc@N: accuracy of the N % most confident texts · cov@.9: the largest share of the texts, most confident first, with accuracy ≥ 0.9"
    );
    out
}

/// Per strategy and round, what the out-of-scope texts were published as (`--out-of-scope`;
/// nothing without it).
fn out_of_scope_rows(report: &EvalReport) -> String {
    let mut out = String::new();
    let measured = |m: &RoundMetrics| m.out_of_scope.map(|shares| (m.round, shares));
    if !report
        .runs
        .iter()
        .flat_map(|r| &r.rounds)
        .any(|m| m.out_of_scope.is_some())
    {
        return out;
    }
    let _ = writeln!(
        out,
        "{:<9} {:>2} {:>6} {:>8} {:>8} {:>8}",
        "strategy", "r", "oos", "decided", "review", "nomatch"
    );
    for run in &report.runs {
        for (round, shares) in run.rounds.iter().filter_map(measured) {
            let _ = writeln!(
                out,
                "{:<9} {:>2} {:>6} {:>8.4} {:>8.4} {:>8.4}",
                run.strategy,
                round,
                shares.texts,
                shares.decided,
                shares.needs_review,
                shares.no_match,
            );
        }
    }
    let _ = writeln!(
        out,
        "oos: out-of-scope texts (--out-of-scope), classified after the round and never learned · decided / review / nomatch: the share published as a decided label, as needing review, with no label"
    );
    out
}

/// What a round learned, where its time went, its hallucinations and LLM failures.
fn round_details(strategy: &str, m: &RoundMetrics) -> String {
    let s = &m.seconds;
    format!(
        "{} r{} learned {} ({} right){} · stages: index {:.2}s describe {:.2}s keywords {:.2}s retrieve {:.2}s llm {:.2}s online-index {:.2}s · hallucinations unknown {} outside {}{} · llm failures {}\n",
                strategy,
                m.round,
                m.learned,
                m.learned_correct,
                if m.readings.is_empty() {
                    String::new()
                } else {
                    let readings: Vec<String> = m
                        .readings
                        .iter()
                        .map(|(name, acc)| format!("{name} {acc:.4}"))
                        .collect();
                    format!(" · same answers read as: {}", readings.join(", "))
                },
                s.index_round,
                s.describe_labels,
                s.keywords,
                s.retrieve,
                s.llm,
                s.online_index,
                m.hallucinations_unknown_label,
                m.hallucinations_outside_candidates,
                m.on_list_mass.map_or(String::new(), |mass| format!(
                    " · answers' first-token mass on the list: mean {mass:.3}, {} under 0.9",
                    m.wavering_answers
                )),
                m.llm_failures,
    )
}

const COLOURS: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
];

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Accuracy per round, one line per strategy, as a self-contained SVG.
pub fn svg(report: &EvalReport) -> String {
    let rounds = report
        .runs
        .iter()
        .map(|r| r.rounds.len())
        .max()
        .unwrap_or(1)
        .max(1);
    let plot = Plot::new(rounds);
    let mut out = svg_open(plot.width, plot.height);
    let _ = writeln!(
        out,
        r#"<text x="{}" y="22" text-anchor="middle" font-size="14">{} {}-shot: accuracy per round ({})</text>"#,
        plot.left + plot.plot_w / 2.0,
        escape(&report.dataset),
        report.shots,
        escape(&report.model)
    );
    plot.axes(&mut out);
    for (i, run) in report.runs.iter().enumerate() {
        plot.series(&mut out, i, run);
    }
    out.push_str("</svg>\n");
    out
}

/// An SVG's opening tag and white background.
fn svg_open(width: f64, height: f64) -> String {
    format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
"#
    )
}

/// The accuracy chart's geometry: a plot area with room for the axes' labels and a legend on
/// the right; rounds spread along x, accuracy 0–1 up y.
struct Plot {
    width: f64,
    height: f64,
    left: f64,
    top: f64,
    plot_w: f64,
    plot_h: f64,
    rounds: usize,
}

impl Plot {
    fn new(rounds: usize) -> Self {
        let (width, height) = (640.0, 400.0);
        let (left, right, top, bottom) = (60.0, 150.0, 40.0, 50.0);
        Self {
            width,
            height,
            left,
            top,
            plot_w: width - left - right,
            plot_h: height - top - bottom,
            rounds,
        }
    }

    fn x(&self, round: usize) -> f64 {
        if self.rounds == 1 {
            self.left + self.plot_w / 2.0
        } else {
            self.left + self.plot_w * (round - 1) as f64 / (self.rounds - 1) as f64
        }
    }

    fn y(&self, value: f64) -> f64 {
        self.top + self.plot_h * (1.0 - value.clamp(0.0, 1.0))
    }

    /// Grid lines with accuracy ticks, round labels, and the axes' titles.
    fn axes(&self, out: &mut String) {
        let (left, top, plot_w, plot_h) = (self.left, self.top, self.plot_w, self.plot_h);
        for tick in 0..=5 {
            let value = tick as f64 / 5.0;
            let _ = writeln!(
                out,
                r##"<line x1="{left}" x2="{}" y1="{y}" y2="{y}" stroke="#ddd"/><text x="{}" y="{}" text-anchor="end">{value:.1}</text>"##,
                left + plot_w,
                left - 6.0,
                self.y(value) + 4.0,
                y = self.y(value),
            );
        }
        for round in 1..=self.rounds {
            let _ = writeln!(
                out,
                r#"<text x="{}" y="{}" text-anchor="middle">R{round}</text>"#,
                self.x(round),
                top + plot_h + 20.0
            );
        }
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" text-anchor="middle">round</text><text x="16" y="{}" transform="rotate(-90 16 {})" text-anchor="middle">accuracy</text>"#,
            left + plot_w / 2.0,
            self.height - 10.0,
            top + plot_h / 2.0,
            top + plot_h / 2.0
        );
    }

    /// One strategy's line, its points (with their values as tooltips) and its legend entry.
    fn series(&self, out: &mut String, i: usize, run: &StrategyRun) {
        let colour = COLOURS[i % COLOURS.len()];
        let points: Vec<String> = run
            .rounds
            .iter()
            .map(|m| format!("{:.1},{:.1}", self.x(m.round), self.y(m.accuracy)))
            .collect();
        let _ = writeln!(
            out,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="2" points="{}"/>"#,
            points.join(" ")
        );
        for m in &run.rounds {
            let _ = writeln!(
                out,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{colour}"><title>{} R{}: {:.4}</title></circle>"#,
                self.x(m.round),
                self.y(m.accuracy),
                escape(&run.strategy),
                m.round,
                m.accuracy
            );
        }
        let legend_x = self.left + self.plot_w;
        let ly = self.top + 10.0 + 20.0 * i as f64;
        let _ = writeln!(
            out,
            r#"<line x1="{}" x2="{}" y1="{ly}" y2="{ly}" stroke="{colour}" stroke-width="2"/><text x="{}" y="{}">{}</text>"#,
            legend_x + 15.0,
            legend_x + 40.0,
            legend_x + 46.0,
            ly + 4.0,
            escape(&run.strategy)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::RoundMetrics;

    pub(super) fn report() -> EvalReport {
        let rounds = (1..=3)
            .map(|round| RoundMetrics {
                round,
                accuracy: 0.25 * round as f64,
                ..RoundMetrics::default()
            })
            .collect();
        EvalReport {
            dataset: "toy<&>".into(),
            shots: 1,
            limit: Some(5),
            seed: 1,
            order: "file".into(),
            model: "none".into(),
            keyword_mode: "tfidf".into(),
            choice: "scored".into(),
            held_out: "test".into(),
            named_labels: true,
            embedding_model: None,
            ablations: vec![],
            runs: vec![StrategyRun {
                strategy: "steiner".into(),
                rounds,
                texts: Vec::new(),
                out_of_scope_texts: Vec::new(),
                llm_choice: None,
                label_map: None,
                per_label: None,
            }],
            llm_usage: None,
        }
    }

    #[test]
    fn table_has_a_row_per_round() {
        let text = table(&report());
        // A row per round in the metrics table and again in the calibration table.
        assert_eq!(
            text.lines().filter(|l| l.starts_with("steiner  ")).count(),
            6
        );
        assert!(text.contains("0.7500"));
    }

    #[test]
    fn svg_is_well_formed_and_escaped() {
        let svg = svg(&report());
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("toy&lt;&amp;&gt;"));
        assert_eq!(svg.matches("<circle").count(), 3);
        // round 3 accuracy 0.75 → y = 40 + 310 * 0.25
        assert!(svg.contains("cy=\"117.5\""));
    }
}
