//! `gorag eval` as a user runs it: retrieval-only on the built-in example, and bad input.

use std::path::Path;
use std::process::Command;

fn gorag() -> Command {
    Command::new(env!("CARGO_BIN_EXE_gorag"))
}

/// `gorag eval examples/tiny --llm none` plus `extra`, expected to fail; its stderr.
fn refused(extra: &[&str]) -> String {
    let output = gorag()
        .args(["eval", "examples/tiny", "--llm", "none"])
        .args(extra)
        .output()
        .expect("run gorag");
    assert!(!output.status.success());
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `gorag eval examples/tiny --llm none --quiet --out OUT` plus `extra`, expected to succeed;
/// its stdout.
fn eval_tiny(extra: &[&str], out: &Path) -> String {
    let output = gorag()
        .args(["eval", "examples/tiny", "--llm", "none", "--quiet"])
        .args(extra)
        .arg("--out")
        .arg(out)
        .output()
        .expect("run gorag");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// The report.json an eval wrote to `out`.
fn report_in(out: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).expect("report.json"))
        .expect("valid JSON")
}

#[test]
fn retrieval_only_eval_writes_table_json_and_svg() {
    let out = tempfile::tempdir().expect("tempdir");
    let stdout = eval_tiny(
        &["--strategy", "steiner,all,naive,ranked,proximity,hybrid"],
        out.path(),
    );
    for strategy in ["steiner", "all", "naive", "ranked", "proximity", "hybrid"] {
        assert_eq!(
            stdout
                .lines()
                .filter(|l| {
                    let mut fields = l.split_whitespace();
                    fields.next() == Some(strategy)
                        && fields.next().is_some_and(|r| r.parse::<u32>().is_ok())
                })
                .count(),
            4,
            "a row per round in the accuracy table and in the confidence table"
        );
    }
    let report = report_in(out.path());
    assert_eq!(report["model"], "none");
    let runs = report["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 6);
    for run in runs {
        let rounds = run["rounds"].as_array().expect("rounds");
        assert_eq!(rounds.len(), 2);
        // Round 2 is scored on both rounds' held-out texts: 9 + 9.
        assert_eq!(rounds[1]["texts"], 18);
        assert_eq!(rounds[1]["labels"], 6);
        let accuracy = rounds[1]["accuracy"].as_f64().expect("accuracy");
        let recall = rounds[1]["candidate_recall"].as_f64().expect("recall");
        assert!(
            accuracy <= recall + 1e-9,
            "a graph prediction is one of the candidates"
        );
        // Easy topics: retrieval alone gets most of them.
        assert!(accuracy >= 0.6, "{} accuracy {accuracy}", run["strategy"]);
        assert_eq!(rounds[1]["hallucination_rate"], 0.0);
        let calibration = &rounds[1]["calibration"];
        let ece = calibration["ece"].as_f64().expect("ece");
        assert!((0.0..=1.0).contains(&ece), "{calibration}");
        assert_eq!(
            calibration["accuracy_at"]
                .as_array()
                .expect("coverages")
                .len(),
            3
        );
        // Every text's prediction, round by round: 9 after round 1, 18 after round 2.
        let texts = std::fs::read_to_string(out.path().join(format!(
            "texts-{}.jsonl",
            run["strategy"].as_str().expect("name")
        )))
        .expect("texts file");
        let lines: Vec<serde_json::Value> = texts
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect();
        assert_eq!(lines.len(), 27);
        assert!(lines.iter().all(|l| l["confidence"].as_f64().is_some()));
    }
    let confidence_svg =
        std::fs::read_to_string(out.path().join("confidence.svg")).expect("confidence.svg");
    assert_eq!(
        confidence_svg.matches("<polyline").count(),
        12,
        "two panels per strategy"
    );
    assert_eq!(
        runs[1]["rounds"][1]["mean_candidates"], 6.0,
        "`all` offers every label"
    );
    let svg = std::fs::read_to_string(out.path().join("accuracy.svg")).expect("svg");
    assert_eq!(svg.matches("<polyline").count(), 6);
    // The ranked strategies offer at most `--max-candidates` (5), best first.
    for run in &runs[3..] {
        for round in run["rounds"].as_array().expect("rounds") {
            assert!(round["mean_candidates"].as_f64().expect("cands") <= 5.0);
        }
    }
}

#[test]
fn missing_dataset_is_a_clear_error() {
    let output = gorag()
        .args(["eval", "no/such/dataset", "--llm", "none"])
        .output()
        .expect("run gorag");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no round folders"), "{stderr}");
}

#[test]
fn llm_keywords_without_an_llm_is_refused() {
    assert!(refused(&["--keywords", "llm"]).contains("--keywords llm needs an LLM"));
}

#[test]
fn out_of_range_numbers_are_refused() {
    for (flag, value, message) in [
        (
            "--example-decay",
            "1",
            "--example-decay (engine.ranking.example_decay): must be below 1",
        ),
        (
            "--phrase-capacity",
            "999",
            "--phrase-capacity (engine.phrase_capacity): must be at least 1000",
        ),
    ] {
        let stderr = refused(&[flag, value]);
        assert!(stderr.contains(message), "{flag} {value}: {stderr}");
    }
}

#[test]
fn tuning_on_dev_texts_needs_dev_files() {
    let stderr = refused(&["--held-out", "dev"]);
    assert!(
        stderr.contains("`--held-out dev` needs dev.tsv"),
        "{stderr}"
    );
}

#[test]
fn a_csv_laid_out_by_the_script_is_evaluated() {
    let out = tempfile::tempdir().expect("tempdir");
    let data = out.path().join("mydata");
    let status = Command::new("python3")
        .arg("scripts/dataset-from-csv.py")
        .arg("examples/csv/texts.csv")
        .arg(&data)
        .args(["--shots", "1,2"])
        .status()
        .expect("run python3");
    assert!(status.success());
    for file in [
        "1shot/r1/train.tsv",
        "1shot/r2/test.tsv",
        "2shot/r2/train.tsv",
    ] {
        assert!(data.join(file).is_file(), "{file} missing");
    }
    let output = gorag()
        .arg("eval")
        .arg(&data)
        .args([
            "--shots",
            "2",
            "--llm",
            "none",
            "--strategy",
            "naive,hybrid",
            "--out",
        ])
        .arg(out.path().join("report"))
        .output()
        .expect("run gorag");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("2-shot"), "{stdout}");
    assert!(
        stdout.lines().any(|l| l.starts_with("hybrid     2    6")),
        "{stdout}"
    );
}

#[test]
fn a_shuffled_order_is_named_in_the_heading_and_the_report() {
    let out = tempfile::tempdir().expect("tempdir");
    let stdout = eval_tiny(&["--order", "shuffled", "--seed", "3"], out.path());
    assert!(stdout.contains("· shuffled (seed 3)"), "{stdout}");
    let report = report_in(out.path());
    assert_eq!(report["order"], "shuffled");
    // Every held-out text is still scored, once.
    assert_eq!(report["runs"][0]["rounds"][1]["texts"], 18);
    assert!(refused(&["--order", "sorted"]).contains("invalid value 'sorted'"));
}

/// A copy of examples/tiny's round 1 in `dir`, with `test.tsv` replaced by `test` and
/// `train.tsv` prefixed by `train_prefix`.
fn tiny_round_with(dir: &Path, train_prefix: &str, test: &str) {
    let round = dir.join("1shot/r1");
    std::fs::create_dir_all(&round).expect("round folder");
    let train = std::fs::read_to_string("examples/tiny/1shot/r1/train.tsv").expect("tiny train");
    std::fs::write(round.join("train.tsv"), format!("{train_prefix}{train}")).expect("train");
    std::fs::write(round.join("test.tsv"), test).expect("test");
}

#[test]
fn a_round_with_no_text_to_classify_is_an_error_not_a_row_of_zeros() {
    let dir = tempfile::tempdir().expect("tempdir");
    tiny_round_with(dir.path(), "", "\n\n");
    let output = gorag()
        .arg("eval")
        .arg(dir.path())
        .args(["--llm", "none", "--quiet", "--embedding-model", "none"])
        .arg("--out")
        .arg(dir.path().join("out"))
        .output()
        .expect("run gorag");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("test.tsv: no texts to classify"),
        "{stderr}"
    );
}

#[test]
fn a_spreadsheet_byte_order_mark_is_not_part_of_the_first_label() {
    let dir = tempfile::tempdir().expect("tempdir");
    let test = std::fs::read_to_string("examples/tiny/1shot/r1/test.tsv").expect("tiny test");
    tiny_round_with(dir.path(), "\u{feff}", &test);
    let out = dir.path().join("out");
    let output = gorag()
        .arg("eval")
        .arg(dir.path())
        .args(["--llm", "none", "--quiet", "--embedding-model", "none"])
        .arg("--out")
        .arg(&out)
        .output()
        .expect("run gorag");
    assert!(output.status.success(), "{output:?}");
    let texts = std::fs::read_to_string(out.join("texts-hybrid.jsonl")).expect("texts");
    assert!(!texts.contains('\u{feff}'), "a label kept the mark");
}

/// With no server at `--llm`, eval stops at once with one paragraph naming the URL and the way
/// out, instead of retrying every text.
#[test]
fn an_llm_endpoint_that_does_not_answer_is_named_before_any_work() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("a free port");
    let url = format!("http://127.0.0.1:{port}/v1");
    let started = std::time::Instant::now();
    let output = gorag()
        .args([
            "eval",
            "examples/tiny",
            "--quiet",
            "--embedding-model",
            "none",
        ])
        .args(["--llm", &url])
        .output()
        .expect("run gorag");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(&url), "{stderr}");
    assert!(stderr.contains("--llm none"), "{stderr}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
}

/// Each text's prediction, per-label precision / recall / F1 and the confused pairs, as files a
/// spreadsheet opens and in report.json.
#[test]
fn per_label_figures_and_each_prediction_are_written_for_spreadsheets() {
    let out = tempfile::tempdir().expect("tempdir");
    let stdout = eval_tiny(&["--embedding-model", "none"], out.path());
    assert!(stdout.contains("macro F1"), "{stdout}");
    let labels = std::fs::read_to_string(out.path().join("labels-hybrid.csv")).expect("labels");
    let mut lines = labels.lines();
    assert_eq!(
        lines.next(),
        Some("label,support,predicted,precision,recall,f1")
    );
    // examples/tiny's six labels, by name.
    assert_eq!(lines.count(), 6, "{labels}");
    let texts = std::fs::read_to_string(out.path().join("texts-hybrid.csv")).expect("texts");
    let jsonl = std::fs::read_to_string(out.path().join("texts-hybrid.jsonl")).expect("jsonl");
    assert_eq!(
        texts.lines().count(),
        jsonl.lines().count() + 1,
        "a row per text"
    );
    assert!(out.path().join("confusions-hybrid.csv").is_file());
    let report = report_in(out.path());
    let f1 = report["runs"][0]["per_label"]["macro_f1"].as_f64();
    assert!(f1.is_some_and(|f1| (0.0..=1.0).contains(&f1)), "{f1:?}");
}

/// scripts/dataset-from-csv.py never fails silently: an unclosed quote, a ragged row and an
/// empty file are errors with their line; a spreadsheet's byte-order mark is read.
#[test]
fn the_csv_script_names_bad_input_and_reads_a_byte_order_mark() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = |name: &str, body: &str| {
        let csv = dir.path().join(format!("{name}.csv"));
        std::fs::write(&csv, body).expect("csv");
        let output = Command::new("python3")
            .arg("scripts/dataset-from-csv.py")
            .arg(&csv)
            .arg(dir.path().join(name))
            .output()
            .expect("python3");
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        (output.status.success(), stderr)
    };
    let rows = "billing,charged twice\nbilling,wrong invoice\nshipping,parcel late\nshipping,where is it\n";
    let cases = [
        (
            "unclosed",
            format!("label,text\n{rows}billing,\"my invoice\nshipping,late\n"),
            "unclosed.csv:6:",
        ),
        (
            "ragged",
            format!("label,text\n{rows}billing,my invoice,extra\n"),
            "ragged.csv:6: 2 columns expected",
        ),
        ("empty", "label,text\n".to_string(), "no labelled text"),
    ];
    for (name, body, message) in cases {
        let (ok, stderr) = run(name, &body);
        assert!(!ok, "{name} was accepted");
        assert!(stderr.contains(message), "{name}: {stderr}");
    }
    let (ok, stderr) = run("bom", &format!("\u{feff}label,text\n{rows}"));
    assert!(ok, "{stderr}");
}

/// `gorag eval --help` shows the flags a newcomer needs before the tuning ones.
#[test]
fn help_shows_common_flags_before_the_tuning_groups() {
    let output = gorag()
        .args(["eval", "--help"])
        .output()
        .expect("run gorag");
    let help = String::from_utf8_lossy(&output.stdout);
    let at = |flag: &str| help.find(flag).unwrap_or(usize::MAX);
    for common in ["--llm <", "--out <", "--strategy <", "--embedding-model <"] {
        assert!(
            at(common) < at("Keywords and ablations (tuning):"),
            "{common}:\n{help}"
        );
    }
    assert!(
        at("Ranking (engine.ranking):") < at("--max-candidates"),
        "{help}"
    );
}

/// `--labels` takes the taxonomy file of `gorag labels import`: its names and descriptions
/// reach the split's labels, what it names that the split lacks is said, a bad file is refused
/// with its line.
#[test]
fn eval_takes_label_names_and_descriptions_from_a_taxonomy_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("labels.csv");
    std::fs::write(
        &file,
        "label,name,description\n\
         astronomy,Space and stars,\"Planets, telescopes and galaxies\"\n\
         gardening,Gardening,Plants and soil\n",
    )
    .expect("taxonomy");
    let out = dir.path().join("out");
    let output = gorag()
        .args(["eval", "examples/tiny", "--llm", "none", "--quiet"])
        .args(["--embedding-model", "none", "--labels"])
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .output()
        .expect("run gorag");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{output:?}");
    assert!(
        stdout.contains("1 of the split's 6 named, 1 described; not in the split: gardening"),
        "{stdout}"
    );

    std::fs::write(&file, "label,nmae\nastronomy,Space\n").expect("bad taxonomy");
    let output = gorag()
        .args(["eval", "examples/tiny", "--llm", "none", "--labels"])
        .arg(&file)
        .output()
        .expect("run gorag");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("line 1: unknown column \"nmae\""),
        "{stderr}"
    );
}

#[test]
fn out_of_scope_texts_are_measured_after_every_round_and_no_match_is_counted_apart() {
    let out = tempfile::tempdir().expect("tempdir");
    let stdout = eval_tiny(
        &["--out-of-scope", "examples/out-of-scope/texts.csv"],
        out.path(),
    );
    // A row per round of the out-of-scope table, its shares summing to 1.
    let rows: Vec<Vec<f64>> = stdout
        .lines()
        .skip_while(|l| !l.contains("oos  decided"))
        .skip(1)
        .take_while(|l| l.starts_with("hybrid"))
        .map(|l| {
            l.split_whitespace()
                .skip(3)
                .map(|v| v.parse().expect("a share"))
                .collect()
        })
        .collect();
    assert_eq!(rows.len(), 2, "{stdout}");
    for shares in &rows {
        let sum: f64 = shares.iter().sum();
        assert!((sum - 1.0).abs() < 1e-3, "{shares:?}");
        // Most of these texts share no word with astronomy, cooking or football.
        assert!(shares[2] > 0.5, "no match {shares:?}\n{stdout}");
    }
    let report = report_in(out.path());
    let round = &report["runs"][0]["rounds"][1];
    assert_eq!(round["out_of_scope"]["texts"], 62);
    assert!(round["no_match_share"].is_number(), "{round}");
    // Each out-of-scope text's prediction, with the evidence the rule read.
    let written =
        std::fs::read_to_string(out.path().join("out-of-scope-hybrid.jsonl")).expect("written");
    assert_eq!(written.lines().count(), 2 * 62);
    let first: serde_json::Value =
        serde_json::from_str(written.lines().next().expect("a line")).expect("JSON");
    assert!(first["status"].is_string(), "{first}");
}
