//! What `gorag eval` leaves behind: the files in `--out` (report.json, each text's
//! prediction as JSONL and CSV, per-label figures, the label map, the charts) and the per-label
//! summary printed after the table.

use std::path::Path;

use anyhow::{Context, Result};

use crate::eval::{per_label, report};

/// Per strategy, the macro F1 after the last round and the pairs most often confused.
pub(super) fn confusion_summary(report: &report::EvalReport) -> String {
    let mut out = String::new();
    for run in &report.runs {
        let Some(figures) = &run.per_label else {
            continue;
        };
        // Texts published with no label are counted apart: they confuse no two labels.
        let pairs: Vec<String> = figures
            .confusions
            .iter()
            .filter(|c| c.predicted != per_label::NO_MATCH)
            .take(3)
            .map(|c| format!("{} → {} ({})", c.gold, c.predicted, c.texts))
            .collect();
        out.push_str(&format!(
            "{} after round {}: macro F1 {:.3}; {} of {} texts with no match; most confused (gold → predicted): {}\n",
            run.strategy,
            figures.round,
            figures.macro_f1,
            figures.no_match,
            figures.texts,
            if pairs.is_empty() {
                "none".to_string()
            } else {
                pairs.join(", ")
            }
        ));
    }
    out
}

/// Every file of the run under `out` (see the module's doc); returns the paths written.
pub(super) fn write_outputs(report: &report::EvalReport, out: &Path) -> Result<Vec<String>> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let mut written = Vec::new();
    let mut write = |name: &str, contents: String| -> Result<()> {
        let path = out.join(name);
        std::fs::write(&path, contents).with_context(|| format!("writing {}", path.display()))?;
        written.push(path.display().to_string());
        Ok(())
    };
    write("report.json", serde_json::to_string_pretty(report)?)?;
    for run in &report.runs {
        let mut lines = String::new();
        for text in &run.texts {
            lines.push_str(&serde_json::to_string(text)?);
            lines.push('\n');
        }
        write(&format!("texts-{}.jsonl", run.strategy), lines)?;
        if !run.out_of_scope_texts.is_empty() {
            let mut lines = String::new();
            for text in &run.out_of_scope_texts {
                lines.push_str(&serde_json::to_string(text)?);
                lines.push('\n');
            }
            write(&format!("out-of-scope-{}.jsonl", run.strategy), lines)?;
        }
        // The same, and the per-label figures, as files a spreadsheet opens.
        write(
            &format!("texts-{}.csv", run.strategy),
            per_label::texts_csv(&run.texts)?,
        )?;
        if let Some(figures) = &run.per_label {
            write(
                &format!("labels-{}.csv", run.strategy),
                per_label::labels_csv(figures)?,
            )?;
            write(
                &format!("confusions-{}.csv", run.strategy),
                per_label::confusions_csv(figures)?,
            )?;
        }
    }
    if let Some(map) = report.runs.iter().find_map(|r| r.label_map.as_ref()) {
        let title = format!("{} labels after the last round", report.dataset);
        write(
            "labels.html",
            crate::discovery::map_html::html(&title, map, None),
        )?;
    }
    write("accuracy.svg", report::svg(report))?;
    // Chosen on test texts, a setting would be tuned on what it is judged by: only dev runs
    // write one (the curve is printed either way).
    if let (Some(toml), "dev") = (
        report::llm_calibration_toml(report),
        report.held_out.as_str(),
    ) {
        write("llm-calibration.toml", toml)?;
    }
    write("confidence.svg", report::confidence_svg(report))?;
    Ok(written)
}
