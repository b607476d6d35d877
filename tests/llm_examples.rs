//! The LLM examples of docs/guide/llm.md (OpenAI, vLLM, Ollama), run as written against the
//! scripted OpenAI-compatible endpoint on loopback (no network here): only the URL is pointed
//! at it. Each must reach the endpoint with the example's model, and with its key when the
//! example exports one.

#[allow(dead_code)]
mod support;

use std::process::Command;

use support::fake_llm::{FakeLlm, Reply};

const PAGE: &str = "docs/guide/llm.md";
const TEST_KEY: &str = "test-key-123";

/// The fenced blocks of `language` in a Markdown page.
fn blocks(markdown: &str, language: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut lines = markdown.lines();
    while let Some(line) = lines.next() {
        if line.trim() == format!("```{language}") {
            let body: Vec<&str> = lines
                .by_ref()
                .take_while(|l| !l.starts_with("```"))
                .collect();
            found.push(body.join("\n"));
        }
    }
    found
}

/// An example: its `--set` settings and the variables it exports.
#[derive(Debug)]
struct Example {
    sets: Vec<String>,
    exported: Vec<String>,
}

/// A shell block's `--set KEY=VALUE` words and `export NAME=…` names (comments dropped, line
/// continuations joined, simple quotes removed).
fn example(block: &str) -> Example {
    let joined = block
        .lines()
        .map(|l| l.split(" #").next().unwrap_or(l).trim_end())
        .collect::<Vec<_>>()
        .join("\n")
        .replace("\\\n", " ");
    let words: Vec<String> = joined
        .split_whitespace()
        .map(|w| w.trim_matches(|c| c == '"' || c == '\'').to_string())
        .collect();
    let sets = words
        .windows(2)
        .filter(|pair| pair[0] == "--set")
        .map(|pair| pair[1].clone())
        .collect();
    let exported = words
        .windows(2)
        .filter(|pair| pair[0] == "export")
        .filter_map(|pair| pair[1].split_once('=').map(|(name, _)| name.to_string()))
        .collect();
    Example { sets, exported }
}

fn setting<'a>(sets: &'a [String], key: &str) -> Option<&'a str> {
    sets.iter()
        .rev()
        .find_map(|s| s.strip_prefix(key)?.strip_prefix('='))
}

/// Run `gorag classify` on named labels (which the LLM is asked to describe) with `config`
/// args, the URL pointed at `llm`; the requests' heads and bodies.
fn run(llm: &FakeLlm, config: &[String], exported: &[String]) -> (Vec<String>, Vec<String>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let labels = dir.path().join("labels.csv");
    std::fs::write(
        &labels,
        "label,name,example\nbilling,billing and payments,I was charged twice\n\
         login,account access,I cannot sign in\n",
    )
    .expect("write");
    let texts = dir.path().join("texts.csv");
    std::fs::write(&texts, "id,text\nt1,charged two times\n").expect("write");
    let mut command = Command::new(env!("CARGO_BIN_EXE_gorag"));
    command
        .args(["classify", "--labels"])
        .arg(&labels)
        .arg(&texts)
        .args(config)
        .args(["--set", &format!("llm.url={}", llm.url)])
        .env_remove("OPENAI_API_KEY")
        .env_remove("GORAG_LLM_API_KEY")
        .env_remove("RUST_BACKTRACE");
    for name in exported {
        command.env(name, TEST_KEY);
    }
    let output = command.output().expect("run gorag");
    assert!(
        output.status.success(),
        "{config:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    (llm.heads(), llm.requests())
}

fn check(what: &str, model: &str, keyed: bool, (heads, bodies): (Vec<String>, Vec<String>)) {
    assert!(
        bodies
            .iter()
            .any(|b| b.contains(&format!("\"model\":\"{model}\""))),
        "{what}: no request for model {model}: {bodies:?}"
    );
    let authorized = heads.iter().all(|h| {
        h.to_ascii_lowercase()
            .contains(&format!("authorization: bearer {TEST_KEY}"))
    });
    assert_eq!(authorized, keyed, "{what}: {heads:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_llm_example_reaches_the_endpoint_with_its_model_and_key() {
    let page = std::fs::read_to_string(PAGE).expect("the LLM page");
    let examples: Vec<Example> = blocks(&page, "sh")
        .iter()
        .map(|b| example(b))
        .filter(|e| setting(&e.sets, "llm.url").is_some())
        .collect();
    assert!(examples.len() >= 3, "OpenAI, vLLM, Ollama: {examples:?}");
    for example in &examples {
        let model = setting(&example.sets, "llm.model")
            .expect("a model")
            .to_string();
        let llm = FakeLlm::start(Reply::FirstCandidate).await;
        let config: Vec<String> = example
            .sets
            .iter()
            .flat_map(|s| ["--set".to_string(), s.clone()])
            .collect();
        let seen = tokio::task::block_in_place(|| run(&llm, &config, &example.exported));
        check(
            &format!("{example:?}"),
            &model,
            !example.exported.is_empty(),
            seen,
        );
    }

    let tomls: Vec<String> = blocks(&page, "toml")
        .into_iter()
        .filter(|b| b.contains("[llm]"))
        .collect();
    assert!(tomls.len() >= 3, "a TOML block per example: {tomls:?}");
    for toml in &tomls {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("gorag.toml");
        std::fs::write(&file, toml).expect("write");
        let parsed: toml::Table = toml.parse().expect("valid TOML");
        let model = parsed["llm"]["model"]
            .as_str()
            .expect("llm.model")
            .to_string();
        let keyed = parsed["llm"].get("api_key_file").is_some();
        if keyed {
            let key_file = parsed["llm"]["api_key_file"].as_str().unwrap_or_default();
            // The example's key file, made for the run under the temporary folder.
            let local = dir.path().join(key_file.trim_start_matches('/'));
            std::fs::create_dir_all(local.parent().expect("parent")).expect("mkdir");
            std::fs::write(&local, TEST_KEY).expect("write key");
            let rewritten = toml.replace(key_file, &local.display().to_string());
            std::fs::write(&file, rewritten).expect("write");
        }
        let llm = FakeLlm::start(Reply::FirstCandidate).await;
        let config = vec!["--config".to_string(), file.display().to_string()];
        let seen = tokio::task::block_in_place(|| run(&llm, &config, &[]));
        check(toml, &model, keyed, seen);
    }
}
