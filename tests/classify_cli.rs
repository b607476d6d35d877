//! `gorag classify` as a user runs it: the README's "Your own tickets in five minutes",
//! literally, then bad input, rounds between texts, and an LLM endpoint that does not answer.
//! Needs the default sentence encoder in `$GORAG_HOME` (scripts/test.sh fetches it).

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn gorag() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_gorag"));
    command.arg("classify").env_remove("RUST_BACKTRACE");
    command
}

fn text(output: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The fenced blocks (language, body) of a Markdown section, from its heading to the next
/// heading of the same level.
fn section_blocks(markdown: &str, heading: &str) -> Vec<(String, String)> {
    let start = markdown
        .find(heading)
        .unwrap_or_else(|| panic!("no {heading:?} in README.md"));
    let rest = &markdown[start + heading.len()..];
    let end = rest.find("\n## ").unwrap_or(rest.len());
    let mut blocks = Vec::new();
    let mut lines = rest[..end].lines();
    while let Some(line) = lines.next() {
        if let Some(language) = line.strip_prefix("```") {
            let body: Vec<&str> = lines
                .by_ref()
                .take_while(|l| !l.starts_with("```"))
                .collect();
            blocks.push((language.to_string(), body.join("\n") + "\n"));
        }
    }
    blocks
}

/// (id, label) of each prediction line `id → label …` of a table.
fn labels_of(table: &str) -> Vec<(String, String)> {
    table
        .lines()
        .filter_map(|line| {
            let (id, rest) = line.split_once('→')?;
            let label = rest.split_whitespace().next()?;
            Some((id.trim().to_string(), label.to_string()))
        })
        .collect()
}

/// Run a README shell block in `dir` with this build's `gorag` first on the PATH.
fn run_block(block: &str, dir: &Path) -> (String, String) {
    let binary = PathBuf::from(env!("CARGO_BIN_EXE_gorag"));
    let bin_dir = binary.parent().expect("the binary's folder");
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = Command::new("bash")
        .args(["-e", "-c", block])
        .current_dir(dir)
        .env("PATH", path)
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("run bash");
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{block}\n{stdout}\n{stderr}");
    (stdout, stderr)
}

#[test]
fn the_readme_first_screen_runs_as_written_and_predicts_what_it_shows() {
    let readme = std::fs::read_to_string("README.md").expect("README.md");
    let blocks = section_blocks(&readme, "## Your own tickets in five minutes");
    // The setup block (build, model) is what this test and scripts/test.sh already did.
    let [_setup, (sh1, first), (text1, shown1), (sh2, second), (text2, shown2)] = &blocks[..]
    else {
        panic!("expected setup, then two (sh, text) pairs: {blocks:?}");
    };
    assert_eq!([sh1, sh2, text1, text2], ["sh", "sh", "text", "text"]);
    let dir = tempfile::tempdir().expect("tempdir");
    let (stdout, stderr) = run_block(first, dir.path());
    assert_eq!(labels_of(&stdout), labels_of(shown1), "{stderr}");
    assert!(stderr.contains("4 text(s) classified"), "{stderr}");
    // The second block continues in the folder the first one made.
    let tickets = std::fs::read_dir(dir.path())
        .expect("read dir")
        .flatten()
        .find(|e| e.path().is_dir())
        .expect("the first block's folder")
        .path();
    let (stdout, stderr) = run_block(second, &tickets);
    assert_eq!(labels_of(&stdout), labels_of(shown2), "{stderr}");
    assert!(
        stderr.contains("1 label event(s) applied"),
        "the new tag is applied once: {stderr}"
    );
}

const LABELS: &str = "label,example\n\
    billing,I was charged twice for my subscription this month\n\
    login,I cannot sign in since I reset my password\n\
    shipping,My parcel has been stuck in customs for a week\n";

/// A folder with `labels.csv` and `texts` written under `name`.
fn files(name: &str, texts: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("labels.csv"), LABELS).expect("write labels");
    let path = dir.path().join(name);
    std::fs::write(&path, texts).expect("write texts");
    (dir, path)
}

fn classify_file(dir: &Path, texts: &Path) -> Output {
    gorag()
        .arg("--labels")
        .arg(dir.join("labels.csv"))
        .arg(texts)
        .output()
        .expect("run gorag")
}

#[test]
fn a_spreadsheet_csv_with_a_bom_and_extra_columns_is_read_whole() {
    let (dir, texts) = files(
        "texts.csv",
        "\u{feff}id,text,channel\nt1,\"charged twice, again\",mail\nt2,cannot sign in,chat\n",
    );
    let output = classify_file(dir.path(), &texts);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stderr}");
    let predictions: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("a prediction per line"))
        .collect();
    assert_eq!(predictions.len(), 2);
    assert_eq!(predictions[0]["text_id"], "t1");
    assert_eq!(predictions[0]["label"], "billing");
    assert_eq!(predictions[0]["metadata"]["channel"], "mail");
    assert_eq!(predictions[1]["label"], "login");
}

#[test]
fn bad_rows_are_named_with_their_line_and_the_exit_status_says_so() {
    let (dir, texts) = files(
        "texts.csv",
        "id,text\nt1,charged twice\nt2,a,b\nt3,\nt4,\"never closed\nt5,lost\n",
    );
    let output = classify_file(dir.path(), &texts);
    let (stdout, stderr) = text(&output);
    assert!(!output.status.success());
    assert_eq!(
        stdout.lines().count(),
        1,
        "t1 alone is classified: {stdout}"
    );
    assert!(
        stderr.contains("texts.csv:line 3: 3 cells, more than"),
        "{stderr}"
    );
    assert!(stderr.contains("texts.csv:line 4: empty_text"), "{stderr}");
    assert!(
        stderr.contains("texts.csv:line 5: a quote opens a cell here and is never closed"),
        "{stderr}"
    );
    assert!(stderr.contains("3 line(s) could not be used"), "{stderr}");
}

#[test]
fn an_empty_file_no_texts_or_no_text_column_is_an_error() {
    for (content, expected) in [
        ("", "a header line naming the columns is needed"),
        ("id,text\n", "no texts in it"),
        (
            "id,body\nt1,charged twice\n",
            "no `text` column (the columns are id, body)",
        ),
    ] {
        let (dir, texts) = files("texts.csv", content);
        let output = classify_file(dir.path(), &texts);
        let (_, stderr) = text(&output);
        assert!(!output.status.success(), "{content:?}");
        assert!(stderr.contains(expected), "{content:?}: {stderr}");
    }
    let (dir, texts) = files("texts.csv", "id,text\nt1,x\n");
    let output = gorag()
        .arg(&texts)
        .current_dir(dir.path())
        .output()
        .expect("run");
    assert!(!output.status.success());
    assert!(text(&output).1.contains("no labels to classify with"));
}

#[test]
fn a_round_between_texts_takes_effect_for_the_texts_after_it() {
    let round = r#"{"type":"round","round":"r2","labels":[{"id":"refund","examples":["please refund my cancelled order","I want my money back for the return"]}]}"#;
    let text_line = r#"{"id":"ID","text":"refund my money for the cancelled order please"}"#;
    let input = format!(
        "{}\n{round}\n{}\n",
        text_line.replace("ID", "before"),
        text_line.replace("ID", "after")
    );
    let (dir, texts) = files("texts.jsonl", &input);
    let output = classify_file(dir.path(), &texts);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stderr}");
    let labels: Vec<(String, String)> = stdout
        .lines()
        .map(|l| {
            let p: serde_json::Value = serde_json::from_str(l).expect("JSON");
            (p["text_id"].to_string(), p["label"].to_string())
        })
        .collect();
    assert_eq!(labels[0].0, "\"before\"");
    assert_ne!(labels[0].1, "\"refund\"", "not a label yet");
    assert_eq!(labels[1], ("\"after\"".into(), "\"refund\"".into()));
}

#[test]
fn a_state_folder_keeps_labels_and_adds_only_what_is_new() {
    let (dir, texts) = files("texts.csv", "id,text\nt1,charged twice\n");
    let state = dir.path().join("state");
    let run = || {
        gorag()
            .arg("--labels")
            .arg(dir.path().join("labels.csv"))
            .arg("--state")
            .arg(&state)
            .arg(&texts)
            .output()
            .expect("run gorag")
    };
    let first = run();
    assert!(first.status.success(), "{}", text(&first).1);
    assert!(text(&first).1.contains("1 label event(s) applied"));
    let again = run();
    assert!(again.status.success());
    assert!(
        !text(&again).1.contains("label event"),
        "nothing new to apply: {}",
        text(&again).1
    );
    // A new example of a known label is added; the labels file need not name every label.
    std::fs::write(
        dir.path().join("labels.csv"),
        "label,example\nbilling,the invoice total is wrong\n",
    )
    .expect("write");
    let third = run();
    let (_, stderr) = text(&third);
    assert!(third.status.success(), "{stderr}");
    assert!(stderr.contains("1 label event(s) applied"), "{stderr}");
    assert!(
        stderr.contains("(login, shipping): they stay active"),
        "{stderr}"
    );
}

#[test]
fn an_llm_endpoint_that_does_not_answer_stops_classify_at_once() {
    let (dir, texts) = files("texts.csv", "id,text\nt1,charged twice\n");
    std::fs::write(
        dir.path().join("labels.csv"),
        "label,name,example\nbilling,billing and payments,I was charged twice\n",
    )
    .expect("write");
    let started = std::time::Instant::now();
    let output = gorag()
        .arg("--labels")
        .arg(dir.path().join("labels.csv"))
        .args(["--llm", "http://127.0.0.1:9/v1"])
        .arg(&texts)
        .output()
        .expect("run gorag");
    let (_, stderr) = text(&output);
    assert!(!output.status.success());
    assert!(started.elapsed().as_secs() < 20, "{:?}", started.elapsed());
    assert!(
        stderr.contains("the LLM endpoint http://127.0.0.1:9/v1 did not answer")
            && stderr.contains("--llm none"),
        "{stderr}"
    );
}

/// `gorag classify` without an LLM or a sentence encoder (neither is what these tests are about).
fn classify_plain(labels: &Path, texts: &Path, sets: &[&str]) -> Output {
    let mut command = gorag();
    command
        .args(["--llm", "none", "--set", "engine.embedding_model=none"])
        .arg("--labels")
        .arg(labels)
        .arg(texts);
    for set in sets {
        command.args(["--set", set]);
    }
    command.output().expect("run gorag")
}

/// The bounds of docs/guide/bounds.md in `gorag classify`: a labels file past one is refused
/// with the line and the bound's key (until the bound is raised); a text or label event past
/// one among the texts is named with its line, and the lines after it are classified.
#[test]
fn labels_and_texts_past_their_bounds_are_named_with_their_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let labels = dir.path().join("labels.csv");
    let long_id = "x".repeat(300);
    std::fs::write(&labels, format!("{LABELS}{long_id},an example of it\n")).expect("write");
    let texts = dir.path().join("texts.jsonl");
    let round = serde_json::json!({"type": "round", "round": "r2", "labels": [
        {"id": "refund", "name": "n".repeat(300), "examples": ["refund my order"]}
    ]});
    let input = [
        serde_json::json!({"id": "i".repeat(1025), "text": "charged twice"}).to_string(),
        round.to_string(),
        serde_json::json!({"id": "t3", "text": "I was charged twice this month"}).to_string(),
    ]
    .join("\n");
    std::fs::write(&texts, input).expect("write");

    let output = classify_plain(&labels, &texts, &[]);
    let (stdout, stderr) = text(&output);
    assert!(!output.status.success());
    assert!(stdout.is_empty(), "nothing classified: {stdout}");
    assert!(
        stderr
            .contains("line 5: the label id is 300 bytes; the limit (labels.max_id_bytes) is 256"),
        "{stderr}"
    );
    assert!(stderr.len() < 2_000, "the id is quoted short: {stderr}");

    let output = classify_plain(&labels, &texts, &["labels.max_id_bytes=300"]);
    let (stdout, stderr) = text(&output);
    assert!(!output.status.success(), "two lines unusable: {stderr}");
    assert!(
        stderr.contains("texts.jsonl:line 1: over_limit: the text's id is 1025 bytes; the limit (input.max_id_bytes) is 1024"),
        "{stderr}"
    );
    assert!(
        stderr.contains("texts.jsonl:line 2: over_limit: label \"refund\": its name is 300 bytes; the limit (labels.max_name_bytes)"),
        "{stderr}"
    );
    assert!(stderr.contains("2 line(s) could not be used"), "{stderr}");
    let ids: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("JSON")["text_id"].clone())
        .collect();
    assert_eq!(ids, ["t3"], "{stdout}");
}

#[test]
fn a_text_no_label_explains_has_an_empty_label_and_status_no_match() {
    let (dir, texts) = files(
        "texts.csv",
        "id,text\nt1,Der Kindergarten bleibt am Freitag geschlossen.\nt2,charged twice for my subscription\n",
    );
    let output = gorag()
        .arg("--labels")
        .arg(dir.path().join("labels.csv"))
        .args(["--output", "csv"])
        .arg(&texts)
        .output()
        .expect("run gorag");
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stderr}");
    let mut rows = csv::Reader::from_reader(stdout.as_bytes());
    let rows: Vec<csv::StringRecord> = rows.records().map(|r| r.expect("a row")).collect();
    // id, label, label_name, confidence, status, candidates, gold_label
    assert_eq!(&rows[0][0], "t1");
    assert_eq!((&rows[0][1], &rows[0][4]), ("", "no_match"), "{stdout}");
    assert_eq!(&rows[1][1], "billing", "{stdout}");
    assert!(stderr.contains("1 match no label"), "{stderr}");

    // The same text as JSON: `label` is null, and the candidates stay for a reviewer.
    let output = classify_file(dir.path(), &texts);
    let (stdout, _) = text(&output);
    let first: serde_json::Value =
        serde_json::from_str(stdout.lines().next().expect("a line")).expect("JSON");
    assert!(first["label"].is_null(), "{first}");
    assert_eq!(first["status"], "no_match");
    assert_eq!(first["version"], 4);
}

#[test]
fn a_correction_to_none_in_the_input_is_applied_and_an_old_version_refused() {
    let none = r#"{"type":"correct","version":2,"text_id":"t1","none_of_these":true,"text":"charged twice"}"#;
    let old = r#"{"type":"correct","text_id":"t1","none_of_these":true,"text":"charged twice"}"#;
    let input = format!("{none}\n{old}\n{{\"id\":\"t2\",\"text\":\"cannot sign in\"}}\n");
    let (dir, texts) = files("texts.jsonl", &input);
    let output = classify_file(dir.path(), &texts);
    let (_, stderr) = text(&output);
    assert!(
        !output.status.success(),
        "the old version's line is refused"
    );
    // The labels file's round and the correction to none.
    assert!(stderr.contains("2 label event(s) applied"), "{stderr}");
    assert!(
        stderr.contains("line 2: invalid_event: `none_of_these` needs"),
        "{stderr}"
    );
}

/// With an LLM endpoint that is never asked (the default `llm.ask_below = 0`), no prediction
/// names its model: `model` says which model was asked about the text.
#[test]
fn a_prediction_names_the_llm_model_only_when_it_was_asked() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let llm = runtime.block_on(support::fake_llm::FakeLlm::start(
        support::fake_llm::Reply::FirstCandidate,
    ));
    let (dir, texts) = files("texts.csv", "id,text\nt1,charged twice for my order\n");
    std::fs::write(
        dir.path().join("labels.csv"),
        "label,name,description,example\n\
         billing,billing,Payments and charges.,I was charged twice\n\
         login,login,Signing in.,I cannot sign in\n",
    )
    .expect("write");
    let ask = |sets: &[&str]| {
        let mut command = gorag();
        command
            .arg("--labels")
            .arg(dir.path().join("labels.csv"))
            .args(["--llm", &llm.url, "--set", "llm.model=scripted"]);
        for set in sets {
            command.args(["--set", set]);
        }
        let output = command.arg(&texts).output().expect("run gorag");
        let (stdout, stderr) = text(&output);
        assert!(output.status.success(), "{stderr}");
        let line = stdout.lines().next().expect("a prediction").to_string();
        serde_json::from_str::<serde_json::Value>(&line).expect("JSON")
    };
    let unasked = ask(&[]);
    assert_eq!(unasked["llm_asked"], false, "{unasked}");
    assert!(unasked.get("model").is_none(), "{unasked}");
    let asked = ask(&["llm.ask_below=1"]);
    assert_eq!(asked["llm_asked"], true, "{asked}");
    assert_eq!(asked["model"], "scripted", "{asked}");
}

/// The CSV output carries what a reviewer reads: the text, the candidates' scores, the label's
/// closest example and the words they share; a label without a name is named by its id.
#[test]
fn the_csv_output_carries_the_text_the_scores_and_the_rationale() {
    let (dir, texts) = files(
        "texts.csv",
        "id,text\nt1,\"I was charged twice, for one order\"\n",
    );
    let output = gorag()
        .args([
            "--llm",
            "none",
            "--set",
            "engine.embedding_model=none",
            "--output",
            "csv",
        ])
        .arg("--labels")
        .arg(dir.path().join("labels.csv"))
        .arg(&texts)
        .output()
        .expect("run gorag");
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stderr}");
    let mut reader = csv::Reader::from_reader(stdout.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .expect("a header")
        .iter()
        .map(str::to_string)
        .collect();
    assert_eq!(
        header,
        [
            "id",
            "label",
            "label_name",
            "confidence",
            "status",
            "candidates",
            "gold_label",
            "text",
            "candidate_scores",
            "example",
            "matched_terms"
        ]
    );
    let row = reader.records().next().expect("a row").expect("a CSV row");
    assert_eq!(&row[1], "billing", "{stdout}");
    assert_eq!(&row[2], "billing", "no name: the id; {stdout}");
    assert_eq!(&row[7], "I was charged twice, for one order");
    let scores: Vec<f64> = row[8]
        .split('|')
        .map(|s| s.parse().expect("a score"))
        .collect();
    assert_eq!(scores.len(), row[5].split('|').count(), "{stdout}");
    assert!(!row[9].is_empty(), "the closest example: {stdout}");
    assert!(row[10].contains("charg"), "the shared words: {stdout}");
}

/// The same loop as the review desk's, for files: classify with a state, correct from a CSV,
/// run the same file again (nothing learned twice, no correction applied twice), rename a tag.
#[test]
fn corrections_from_a_csv_teach_a_kept_state_once_and_a_renamed_tag_is_retired() {
    let (dir, texts) = files(
        "texts.csv",
        "id,text\n\
         t1,My parcel never arrived and tracking shows nothing\n\
         t2,I was charged twice on my card this month\n\
         t3,Please erase every piece of personal data you hold about me\n\
         t4,The courier left the box at the wrong address\n",
    );
    let labels = dir.path().join("labels.csv");
    std::fs::write(
        &labels,
        "label,example\n\
         shipping,My parcel has not arrived and the tracking number shows no movement\n\
         shipping,The courier delivered the package to the wrong address\n\
         billing,I was charged twice on my credit card for the same invoice\n\
         billing,The VAT amount on my bill is wrong\n",
    )
    .expect("write");
    let state = dir.path().join("state");
    let run = |extra: &[&std::ffi::OsStr]| {
        let output = gorag()
            .arg("--state")
            .arg(&state)
            .args(extra)
            .output()
            .expect("run gorag");
        let (stdout, stderr) = text(&output);
        assert!(output.status.success(), "{stderr}");
        (stdout, stderr)
    };
    let digest = || support::kafka::state_of(&state)["digest"].clone();
    let with_texts = [labels.as_os_str(), texts.as_os_str()];
    let labels_flag = std::ffi::OsStr::new("--labels");
    run(&[labels_flag, with_texts[0], with_texts[1]]);
    let once = digest();
    // The same file again: every text is classified, none is learned twice.
    run(&[labels_flag, with_texts[0], with_texts[1]]);
    assert_eq!(digest(), once, "a rerun learned the same texts again");

    // Corrections by id: their texts are found in the texts file.
    let corrections = dir.path().join("answers.csv");
    std::fs::write(
        &corrections,
        "id,label,audit\nt3,none_of_these,\nt2,billing,true\n",
    )
    .expect("write");
    let flag = std::ffi::OsStr::new("--corrections");
    let (_, stderr) = run(&[flag, corrections.as_os_str(), texts.as_os_str()]);
    assert!(stderr.contains("2 correction(s) applied"), "{stderr}");
    let corrected = digest();
    assert_ne!(corrected, once);
    // Given again with the same file: nothing applied, nothing learned.
    let (_, stderr) = run(&[flag, corrections.as_os_str(), texts.as_os_str()]);
    assert!(
        stderr.contains("2 given before (not applied again)"),
        "{stderr}"
    );
    assert_eq!(digest(), corrected);

    // A label that is not active is refused with the row's line; nothing is applied.
    std::fs::write(&corrections, "id,label\nt1,shipping\nt4,none\n").expect("write");
    let output = gorag()
        .arg("--state")
        .arg(&state)
        .arg("--corrections")
        .arg(&corrections)
        .arg(&texts)
        .output()
        .expect("run gorag");
    let (_, stderr) = text(&output);
    assert!(!output.status.success());
    assert!(
        stderr.contains("line 3: \"none\" is not an active label"),
        "{stderr}"
    );
    assert_eq!(digest(), corrected, "a refused file applies nothing");

    // A renamed tag: the old one is retired and said; predictions use the new name only.
    std::fs::write(
        &labels,
        std::fs::read_to_string(&labels)
            .expect("read")
            .replace("billing,", "payments,"),
    )
    .expect("write");
    let (stdout, stderr) = run(&[labels_flag, labels.as_os_str(), texts.as_os_str()]);
    assert!(
        stderr.contains("label \"billing\" is now \"payments\""),
        "{stderr}"
    );
    assert!(!stdout.contains("\"billing\""), "{stdout}");
    assert!(stdout.contains("\"payments\""), "{stdout}");
}
