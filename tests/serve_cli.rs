//! `gorag serve` configuration at the binary's edge: every error at once, layers in order.

use std::process::Command;

fn gorag() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_gorag"));
    command.env_remove("GORAG_CONFIG");
    command
}

#[test]
fn every_configuration_error_is_reported_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("gorag.toml");
    std::fs::write(
        &file,
        "[kafka]\nbrokrs = \"x:1\"\n[input]\nmax_in_flight = 0\n",
    )
    .unwrap();
    let output = gorag()
        .args(["serve", "--config"])
        .arg(&file)
        .args([
            "--set",
            "llm.on_failure=retry_forever",
            "--set",
            "topics.texts=gorag.labels",
        ])
        .env("GORAG__STATE__SNAPSHOT_EVERY", "often")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    for expected in [
        "kafka.brokrs: unknown field",
        "llm.on_failure: unknown variant `retry_forever`",
        "(from --set llm.on_failure)",
        "state.snapshot_every: invalid type",
        "(from environment GORAG__STATE__SNAPSHOT_EVERY)",
        "input.max_in_flight: must be at least 1",
        "topics.texts: same topic as topics.labels",
    ] {
        assert!(
            stderr.contains(expected),
            "missing {expected:?} in:\n{stderr}"
        );
    }
    assert!(stderr.contains("5 configuration error(s)"), "{stderr}");
}

#[test]
fn print_config_shows_the_layers_merged() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("gorag.toml");
    std::fs::write(
        &file,
        "[kafka]\nbrokers = \"file:9092\"\ngroup_id = \"from-file\"\n",
    )
    .unwrap();
    let output = gorag()
        .args([
            "serve",
            "--print-config",
            "--set",
            "kafka.brokers=flag:9092",
        ])
        .env("GORAG_CONFIG", &file)
        .env("GORAG__LLM__URL", "none")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let config: toml::Table = String::from_utf8_lossy(&output.stdout).parse().unwrap();
    assert_eq!(config["kafka"]["brokers"].as_str(), Some("flag:9092"));
    assert_eq!(config["kafka"]["group_id"].as_str(), Some("from-file"));
    assert_eq!(config["llm"]["url"].as_str(), Some("none"));
}

/// The state folder is never the working directory: without `state.dir` it is under
/// `GORAG_HOME` (or the user's data folder), and with no folder to put it under, serve asks
/// for one before it starts anything.
#[test]
fn the_state_folder_defaults_to_gorag_home_and_else_is_asked_for() {
    let home = tempfile::tempdir().unwrap();
    let serve = |command: &mut Command| {
        command
            .args(["serve", "--print-config", "--set", "llm.url=none"])
            .env_remove("GORAG__STATE__DIR")
            .env_remove("XDG_DATA_HOME")
            .output()
            .unwrap()
    };
    let output = serve(gorag().env("GORAG_HOME", home.path()));
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let config: toml::Table = String::from_utf8_lossy(&output.stdout).parse().unwrap();
    let state = home.path().join("state");
    assert_eq!(config["state"]["dir"].as_str(), state.to_str());

    let output = serve(gorag().env_remove("GORAG_HOME").env_remove("HOME"));
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("state.dir: not set"), "{stderr}");
    assert!(stderr.contains("set state.dir, or GORAG_HOME"), "{stderr}");
}
