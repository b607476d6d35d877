//! `gorag calibrate`: fit the confidence calibrator on labelled outcomes — the per-text files
//! `gorag eval` writes (`texts-STRATEGY.jsonl`), from tuning streams, never from test texts.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;
use serde::Deserialize;

use crate::engine::confidence::{self, Calibrator, Outcome, Signals, FEATURE_NAMES};
use crate::eval::calibration;

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// Per-text files of `gorag eval` runs on tuning data (`--held-out dev`). Each file counts
    /// as much as any other, however many texts it holds.
    #[arg(required = true)]
    pub texts: Vec<PathBuf>,
    /// Where to write the fitted calibrator (JSON); printed when left out.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Strength of the pull towards the starting weights, in texts' worth of evidence (0: a
    /// plain fit).
    #[arg(long, default_value_t = 1.0)]
    pub pull: f64,
    /// Start from zero weights instead of the shipped ones (how the shipped ones are made).
    #[arg(long)]
    pub from_zero: bool,
    /// Fit on these texts of each file only: `short` (the texts ranked as short: the file's
    /// short-text weights), `long` (the others: its weights, the short-text ones kept from
    /// the start), or `all` (one set of weights for every text).
    #[arg(long, value_enum, default_value = "all")]
    pub texts_of: TextsOf,
}

/// Files with fewer texts of the kind `--texts-of` asks for are left out of the fit.
const MIN_TEXTS_OF_A_KIND: usize = 30;

/// Which texts of each file a fit reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TextsOf {
    All,
    Short,
    Long,
}

impl TextsOf {
    fn takes(self, signals: &Signals) -> bool {
        match self {
            Self::All => true,
            Self::Short => signals.short,
            Self::Long => !signals.short,
        }
    }
}

/// The fields of a `texts-STRATEGY.jsonl` line that the fit reads.
#[derive(Debug, Deserialize)]
struct Line {
    right: bool,
    signals: Signals,
}

pub fn calibrate(args: CalibrateArgs) -> Result<()> {
    if !(args.pull.is_finite() && args.pull >= 0.0) {
        bail!("--pull: must be a number ≥ 0");
    }
    let mut files = Vec::new();
    let mut paths = args.texts.clone();
    for path in &args.texts {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let mut outcomes = Vec::new();
        for (i, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let line: Line = serde_json::from_str(line)
                .with_context(|| format!("{}:{}: not a per-text line", path.display(), i + 1))?;
            if args.texts_of.takes(&line.signals) {
                outcomes.push((line.signals, line.right));
            }
        }
        if outcomes.len() < MIN_TEXTS_OF_A_KIND && args.texts_of != TextsOf::All {
            // Every file counts alike: a file with a handful of texts of the kind would have
            // them repeated thousands of times (and a stream of long texts has no short ones:
            // no error).
            let kind = format!("{:?}", args.texts_of).to_lowercase();
            println!(
                "{}: {} {kind} texts (fewer than {MIN_TEXTS_OF_A_KIND}), left out",
                path.display(),
                outcomes.len()
            );
            paths.retain(|p| p != path);
            continue;
        }
        if outcomes.is_empty() {
            bail!("{}: no texts", path.display());
        }
        files.push(outcomes);
    }
    if files.is_empty() {
        bail!("no file has texts of that kind (--texts-of)");
    }
    // Every file counts alike: its outcomes repeated to the longest file's length, in order.
    let longest = files.iter().map(Vec::len).max().unwrap_or(0);
    let mut outcomes = Vec::new();
    for file in &files {
        for k in 0..longest {
            let (signals, right) = &file[k % file.len()];
            outcomes.push(Outcome {
                features: signals.features(),
                right: *right,
            });
        }
    }
    let prior = if args.from_zero {
        Calibrator {
            weights: [0.0; confidence::FEATURES],
            short_weights: None,
        }
    } else {
        Calibrator::default()
    };
    let fitted = match args.texts_of {
        // A deployment's own fit reads every one of its texts, short or long, with its weights.
        TextsOf::All => Calibrator {
            short_weights: None,
            ..confidence::fit(&outcomes, &prior, args.pull)
        },
        // The long texts' weights fitted; the short texts keep the shipped ones.
        TextsOf::Long => Calibrator {
            short_weights: Calibrator::default().short_weights,
            ..confidence::fit(&outcomes, &prior, args.pull)
        },
        // The short texts' weights fitted (from the shipped short-text weights, or zero); the
        // long texts keep the shipped ones.
        TextsOf::Short => {
            let shipped = Calibrator::default();
            let short_prior = Calibrator {
                weights: match (args.from_zero, shipped.short_weights) {
                    (false, Some(short)) => short,
                    _ => prior.weights,
                },
                short_weights: None,
            };
            Calibrator {
                weights: shipped.weights,
                short_weights: Some(confidence::fit(&outcomes, &short_prior, args.pull).weights),
            }
        }
    };
    // The set this fit made (the one to paste into the shipped calibrator).
    let made = match (args.texts_of, fitted.short_weights) {
        (TextsOf::Short, Some(short)) => short,
        _ => fitted.weights,
    };
    for (path, file) in paths.iter().zip(&files) {
        let before = figures(&Calibrator::default(), file);
        let after = figures(&fitted, file);
        println!(
            "{}: {} texts · ECE {:.4} → {:.4} · acc@50 {:.4} → {:.4} · cov@.9 {:.4} → {:.4}",
            path.display(),
            file.len(),
            before.ece,
            after.ece,
            before.accuracy_at[0].1,
            after.accuracy_at[0].1,
            before.coverage_at_target,
            after.coverage_at_target,
        );
    }
    for (name, weight) in FEATURE_NAMES.iter().zip(made) {
        println!("{name:>22} {weight:>9.4}");
    }
    let rounded: Vec<String> = made.iter().map(|w| format!("{w:.4}")).collect();
    println!("as Rust: [{}]", rounded.join(", "));
    let json = serde_json::to_string_pretty(&fitted)?;
    match &args.out {
        Some(path) => {
            std::fs::write(path, json).with_context(|| format!("writing {}", path.display()))?;
            println!("wrote {}", path.display());
        }
        None => println!("{json}"),
    }
    Ok(())
}

fn figures(calibrator: &Calibrator, file: &[(Signals, bool)]) -> calibration::Calibration {
    let points: Vec<(f64, bool)> = file
        .iter()
        .map(|(signals, right)| (calibrator.confidence(signals), *right))
        .collect();
    calibration::calibration(&points)
}
