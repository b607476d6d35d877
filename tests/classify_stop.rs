//! `gorag classify --state` stopped midway by SIGTERM (a job scheduler, `kill`, Kubernetes) as
//! by Ctrl-C: what it learned is saved — the state folder equals that of a run over exactly the
//! texts it printed — and both exit with the same status and say which signal stopped them.
#![cfg(unix)]

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Command, Stdio};

const LABELS: &str = "label,example\n\
    billing,I was charged twice for my subscription this month\n\
    login,I cannot sign in since I reset my password\n\
    shipping,My parcel has been stuck in customs for a week\n";

/// Predictions read before the signal: past a write of the state folder (every 100 texts) and
/// not on one, so the unwritten tail must be saved at the stop.
const BEFORE_SIGNAL: usize = 250;

/// Far more texts than are classified before the signal arrives.
const TEXTS: usize = 50_000;

fn texts_csv(count: usize) -> String {
    let phrasings = [
        "charged twice on my card for order",
        "cannot sign in after the password reset for account",
        "parcel stuck in customs with tracking number",
        "refund for the invoice of order",
    ];
    let mut csv = String::from("id,text\n");
    for i in 0..count {
        csv.push_str(&format!("t{i},{} {i}\n", phrasings[i % phrasings.len()]));
    }
    csv
}

fn classify(dir: &Path, state: &Path, texts: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_gorag"));
    command
        .arg("classify")
        .arg("--labels")
        .arg(dir.join("labels.csv"))
        .arg("--state")
        .arg(state)
        .args(["--llm", "none", "--set", "engine.embedding_model=none"])
        .arg(texts)
        .env_remove("RUST_BACKTRACE");
    command
}

/// What `gorag state` says of a folder (digest, documents, graph size…).
fn state_report(state: &Path) -> serde_json::Value {
    let output = Command::new(env!("CARGO_BIN_EXE_gorag"))
        .args(["state", "--dir"])
        .arg(state)
        .output()
        .expect("run gorag state");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("gorag state prints JSON")
}

/// Run classify, send `signal` after [`BEFORE_SIGNAL`] predictions; the exit code, the stderr,
/// and how many predictions it printed in all.
fn stopped_run(
    dir: &Path,
    state: &Path,
    texts: &Path,
    signal: &str,
) -> (Option<i32>, String, usize) {
    let mut child = classify(dir, state, texts)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start gorag classify");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut printed = 0;
    let mut line = String::new();
    while printed < BEFORE_SIGNAL {
        line.clear();
        assert!(
            stdout.read_line(&mut line).expect("read") > 0,
            "classify ended after {printed} predictions"
        );
        printed += 1;
    }
    let sent = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(child.id().to_string())
        .status()
        .expect("run kill");
    assert!(sent.success());
    // The text being classified when the signal came is printed; then nothing more.
    for line in stdout.lines() {
        line.expect("read");
        printed += 1;
    }
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("read stderr");
    let status = child.wait().expect("wait");
    (status.code(), stderr, printed)
}

#[test]
fn sigterm_saves_what_was_learned_and_exits_as_ctrl_c_does() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("labels.csv"), LABELS).expect("write labels");
    let all_texts = texts_csv(TEXTS);
    let texts = dir.path().join("texts.csv");
    std::fs::write(&texts, &all_texts).expect("write texts");
    let mut codes = Vec::new();
    for (signal, said) in [("TERM", "SIGTERM"), ("INT", "Ctrl-C (SIGINT)")] {
        let state = dir.path().join(format!("state-{signal}"));
        let (code, stderr, printed) = stopped_run(dir.path(), &state, &texts, signal);
        assert!(
            stderr.contains(&format!(
                "interrupted by {said}: what was read so far is classified and saved"
            )),
            "{signal}: {stderr}"
        );
        assert!(printed < TEXTS, "{signal}: the run ended before the signal");
        codes.push(code);
        // A run over exactly the texts it printed, uninterrupted, learns the same.
        let prefix: String = all_texts
            .lines()
            .take(1 + printed)
            .map(|l| format!("{l}\n"))
            .collect();
        let prefix_texts = dir.path().join(format!("first-{signal}.csv"));
        std::fs::write(&prefix_texts, prefix).expect("write prefix");
        let whole = dir.path().join(format!("whole-{signal}"));
        let output = classify(dir.path(), &whole, &prefix_texts)
            .output()
            .expect("run gorag classify");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let (stopped, uninterrupted) = (state_report(&state), state_report(&whole));
        assert!(
            stopped["documents"].as_u64() > Some(3),
            "{signal}: texts were learned: {stopped}"
        );
        assert_eq!(stopped, uninterrupted, "{signal}: {printed} texts printed");
    }
    assert_eq!(codes[0], codes[1], "SIGTERM and Ctrl-C exit alike");
    assert_eq!(codes[0], Some(1));
}
