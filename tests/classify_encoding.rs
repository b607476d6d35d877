//! `gorag classify` on files that are not plain UTF-8 with line feeds, as users have them: a
//! CSV saved as Windows-1252 by a spreadsheet is refused whole, at its first bad byte, with the
//! fix; a JSONL line holding such bytes is a bad line like any other; files whose lines end in
//! a lone carriage return (old Mac, Excel's "CSV (Macintosh)") are read line by line as with
//! line feeds, their lines numbered as an editor numbers them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const LABELS: &str = "label,example\n\
    billing,I was charged twice for my subscription this month\n\
    login,I cannot sign in since I reset my password\n";

fn files(texts_name: &str, texts: &[u8]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("labels.csv"), LABELS).expect("write labels");
    let path = dir.path().join(texts_name);
    std::fs::write(&path, texts).expect("write texts");
    (dir, path)
}

fn classify(dir: &Path, texts: &Path) -> (Output, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_gorag"))
        .arg("classify")
        .arg("--labels")
        .arg(dir.join("labels.csv"))
        .args(["--llm", "none", "--set", "engine.embedding_model=none"])
        .arg(texts)
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("run gorag classify");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output, stdout, stderr)
}

fn ids(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .map(|l| {
            let prediction: serde_json::Value = serde_json::from_str(l).expect("JSON");
            prediction["text_id"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

#[test]
fn a_windows_1252_csv_is_refused_whole_at_its_first_bad_byte_with_the_fix() {
    // "café" and "crème" in Windows-1252 on lines 3 and 4.
    let (dir, texts) = files(
        "texts.csv",
        b"id,text\nt1,charged twice\nt2,the caf\xE9 charged me twice\nt3,cr\xE8me\n",
    );
    let (output, stdout, stderr) = classify(dir.path(), &texts);
    assert!(!output.status.success());
    assert!(stdout.is_empty(), "nothing is classified: {stdout}");
    assert!(
        stderr.contains(
            "texts.csv: line 3: not UTF-8 (byte 0xE9 at column 11; 2 lines hold such bytes)"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("iconv -f WINDOWS-1252 -t UTF-8")
            && stderr.contains("nothing was classified"),
        "{stderr}"
    );
}

#[test]
fn a_labels_file_that_is_not_utf8_is_named_by_line() {
    let (dir, texts) = files("texts.csv", b"id,text\nt1,charged twice\n");
    std::fs::write(
        dir.path().join("labels.csv"),
        b"label,example\nbilling,factur\xE9 deux fois\n",
    )
    .expect("write labels");
    let (output, _, stderr) = classify(dir.path(), &texts);
    assert!(!output.status.success());
    assert!(
        stderr.contains("labels.csv: line 2: not UTF-8 (byte 0xE9 at column 15)"),
        "{stderr}"
    );
}

#[test]
fn a_jsonl_line_that_is_not_utf8_is_a_bad_line_and_the_others_are_classified() {
    let (dir, texts) = files(
        "texts.jsonl",
        b"{\"id\":\"a\",\"text\":\"charged twice\"}\n{\"id\":\"b\",\"text\":\"caf\xE9\"}\n{\"id\":\"c\",\"text\":\"cannot sign in\"}\n",
    );
    let (output, stdout, stderr) = classify(dir.path(), &texts);
    assert!(
        !output.status.success(),
        "a bad line makes the exit status non-zero"
    );
    assert_eq!(ids(&stdout), ["a", "c"]);
    assert!(
        stderr.contains("texts.jsonl:line 2: not UTF-8 (byte 0xE9 at column 22)"),
        "{stderr}"
    );
    assert!(stderr.contains("1 line(s) could not be used"), "{stderr}");
}

#[test]
fn carriage_return_line_ends_are_read_as_lines_in_csv_and_jsonl() {
    // A bad row on line 3 is named as line 3, as an editor shows it.
    let (dir, texts) = files(
        "texts.csv",
        b"id,text\rt1,charged twice\rt2,a,b\rt3,\"cannot\rsign in\"\rt4,parcel lost\r",
    );
    let (output, stdout, stderr) = classify(dir.path(), &texts);
    assert!(!output.status.success());
    assert_eq!(ids(&stdout), ["t1", "t3", "t4"], "{stderr}");
    assert!(
        stderr.contains("texts.csv:line 3: 3 cells, more than"),
        "{stderr}"
    );
    assert!(stderr.contains("1 line(s) could not be used"), "{stderr}");

    let (dir, texts) = files(
        "texts.jsonl",
        b"{\"id\":\"a\",\"text\":\"charged twice\"}\r{\"id\":\"b\",\"text\":\"cannot sign in\"}\r\rnot json\r",
    );
    let (output, stdout, stderr) = classify(dir.path(), &texts);
    assert!(!output.status.success());
    assert_eq!(ids(&stdout), ["a", "b"], "{stderr}");
    assert!(stderr.contains("texts.jsonl:line 4: not JSON"), "{stderr}");
}
