use std::path::Path;

use super::*;

fn load(file: &str, env: &[(&str, &str)], sets: &[&str]) -> Result<ServeConfig, ConfigErrors> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gorag.toml");
    std::fs::write(&path, file).unwrap();
    ServeConfig::load(&Layers {
        file: Some(path),
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        sets: sets.iter().map(|s| s.to_string()).collect(),
    })
}

/// librdkafka property names have dots: they are one key under `kafka.client`.
#[test]
fn librdkafka_properties_keep_their_dots() {
    let config = load(
        "",
        &[("GORAG__KAFKA__CLIENT__SOCKET__KEEPALIVE__ENABLE", "true")],
        &[
            "kafka.client.security.protocol=plaintext",
            "kafka.client.debug=consumer",
        ],
    )
    .unwrap();
    let client = &config.kafka.client;
    assert_eq!(client["security.protocol"], "plaintext");
    assert_eq!(client["debug"], "consumer");
    assert_eq!(client["socket.keepalive.enable"], "true");
}

#[test]
fn defaults_need_no_file() {
    let config = ServeConfig::load(&Layers::default()).unwrap();
    assert_eq!(config, ServeConfig::default());
}

#[test]
fn later_layers_win() {
    let config = load(
        "[kafka]\nbrokers = \"file:1\"\ngroup_id = \"from-file\"\n[input]\nmax_in_flight = 3\n",
        &[
            ("GORAG__KAFKA__BROKERS", "env:2"),
            ("GORAG__INPUT__MAX_IN_FLIGHT", "5"),
            ("OTHER", "x"),
        ],
        &["kafka.brokers=flag:3", "llm.on_failure=dead_letter"],
    )
    .unwrap();
    assert_eq!(config.kafka.brokers, "flag:3");
    assert_eq!(config.kafka.group_id, "from-file");
    assert_eq!(config.input.max_in_flight, 5);
    assert_eq!(config.llm.on_failure, OnLlmFailure::DeadLetter);
}

#[test]
fn every_error_is_reported_at_once_with_its_origin() {
    let errors = load(
        "[kafka]\nbrokrs = \"x\"\npartitions = \"three\"\n[topics]\npredictions = \"gorag.texts\"\n[nope]\na = 1\n",
        &[("GORAG__INPUT__MAX_IN_FLIGHT", "many")],
        &["llm.retries=-1", "broken"],
    )
    .unwrap_err()
    .0;
    let all = errors.join("\n");
    for expected in [
        "kafka.brokrs: unknown field",
        "kafka.partitions: invalid type",
        "nope: unknown field",
        "input.max_in_flight: invalid type",
        "(from environment GORAG__INPUT__MAX_IN_FLIGHT)",
        "llm.retries: invalid value",
        "--set broken: expected section.key=value",
        "topics.predictions: same topic as topics.texts",
    ] {
        assert!(all.contains(expected), "missing {expected:?} in:\n{all}");
    }
    assert_eq!(errors.len(), 7, "{all}");
}

#[test]
fn example_decay_must_be_a_fraction() {
    for (value, error) in [
        ("1.5", "engine.ranking.example_decay: must be below 1"),
        ("1", "engine.ranking.example_decay: must be below 1"),
        ("-0.1", "engine.ranking.example_decay: must be a number ≥ 0"),
    ] {
        let set = format!("engine.ranking.example_decay={value}");
        let errors = load("", &[], &[set.as_str()]).unwrap_err().0;
        assert!(
            errors.iter().any(|e| e.contains(error)),
            "{value}: {errors:?}"
        );
    }
    assert!(load("", &[], &["engine.ranking.example_decay=0"]).is_ok());
}

#[test]
fn a_calibrator_file_is_read_at_load_and_a_bad_one_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("calibrator.json");
    let mut weights = crate::engine::confidence::Calibrator::default();
    weights.weights[0] = 1.5;
    std::fs::write(&good, serde_json::to_string(&weights).unwrap()).unwrap();
    let set = format!("engine.calibrator={}", good.display());
    let config = load("", &[], &[set.as_str()]).unwrap();
    assert_eq!(config.engine_config().calibrator, weights);
    assert_eq!(
        load("", &[], &[]).unwrap().engine_config().calibrator,
        crate::engine::confidence::Calibrator::default()
    );
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"weights": [1, 2]}"#).unwrap();
    for path in [bad, dir.path().join("missing.json")] {
        let set = format!("engine.calibrator={}", path.display());
        let errors = load("", &[], &[set.as_str()]).unwrap_err().0;
        assert!(
            errors
                .iter()
                .any(|e| e.starts_with("engine.calibrator: ")
                    && e.contains(&path.display().to_string())),
            "{errors:?}"
        );
    }
}

#[test]
fn phrase_capacity_has_a_floor() {
    let errors = load("", &[], &["engine.phrase_capacity=999"])
        .unwrap_err()
        .0;
    assert!(
        errors
            .iter()
            .any(|e| e.contains("engine.phrase_capacity: must be at least 1000")),
        "{errors:?}"
    );
    let config = load("", &[], &["engine.phrase_capacity=1000"]).unwrap();
    assert_eq!(config.engine_config().phrase_capacity, 1000);
}

#[test]
fn unreadable_file_is_an_error() {
    let errors = ServeConfig::load(&Layers {
        file: Some(PathBuf::from("/nonexistent/gorag.toml")),
        ..Layers::default()
    })
    .unwrap_err();
    assert!(errors.to_string().contains("/nonexistent/gorag.toml"));
}

/// Secrets under `kafka.client` are shown as `***`; typed secrets are not shown at all; a
/// misspelt secret's value is never quoted in an error.
#[test]
fn secrets_are_never_shown() {
    let config = load(
        "[kafka.client]\n\"sasl.password\" = \"hunter2-file\"\n",
        &[("GORAG__KAFKA__CLIENT__SSL__KEY__PASSWORD", "hunter2-env")],
        &["kafka.client.sasl.oauthbearer.client.secret=hunter2-flag"],
    )
    .unwrap();
    let shown = format!("{}\n{:?}", config.to_toml(), config);
    for secret in ["hunter2-file", "hunter2-env", "hunter2-flag"] {
        assert!(!shown.contains(secret), "{shown}");
    }
    assert!(shown.contains("\"sasl.password\" = \"***\""), "{shown}");
    assert_eq!(config.kafka.client["sasl.password"], "hunter2-file");

    let errors = load("", &[], &["kafka.sasl..password=hunter2-bad"]).unwrap_err();
    assert!(!errors.to_string().contains("hunter2-bad"), "{errors}");
    let errors = load("[kafka.client]\n\"sasl.password\" = 12345678\n", &[], &[]).unwrap_err();
    assert!(!errors.to_string().contains("12345678"), "{errors}");
    let errors = load("[kafka]\nsasl_password = \"hunter2-toml", &[], &[]).unwrap_err();
    assert!(!errors.to_string().contains("hunter2-toml"), "{errors}");
    assert!(errors.to_string().contains("line 2"), "{errors}");
}

/// SASL's password comes from a file (a mounted Secret) or the environment, and TLS files are
/// checked when the configuration is loaded.
#[test]
fn kafka_security_reads_its_secrets_and_checks_its_files() {
    let dir = tempfile::tempdir().unwrap();
    let password = dir.path().join("password");
    std::fs::write(&password, "s3cret\n").unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, "stand-in").unwrap();
    let file = format!(
        "[kafka]\nsecurity_protocol = \"SASL_SSL\"\n[kafka.tls]\nca_file = {ca:?}\n\
         [kafka.sasl]\nmechanism = \"SCRAM-SHA-512\"\nusername = \"gorag\"\n\
         password_file = {password:?}\n"
    );
    let config = load(&file, &[], &[]).unwrap();
    let secret = config.kafka.secrets.sasl_password.as_ref().unwrap();
    assert_eq!(secret.expose(), "s3cret");
    assert!(!config.to_toml().contains("s3cret"));

    let from_env = load(
        "[kafka]\nsecurity_protocol = \"sasl_plaintext\"\n[kafka.sasl]\nmechanism = \"PLAIN\"\n\
         username = \"u\"\n",
        &[(SASL_PASSWORD_ENV, "from-env")],
        &[],
    )
    .unwrap();
    let secret = from_env.kafka.secrets.sasl_password.as_ref().unwrap();
    assert_eq!(secret.expose(), "from-env");

    let errors = load(
        "[kafka]\nsecurity_protocol = \"sasl_ssl\"\n[kafka.tls]\ncert_file = \"/nope/c.pem\"\n",
        &[],
        &[],
    )
    .unwrap_err()
    .to_string();
    for expected in [
        "kafka.tls.cert_file and kafka.tls.key_file: give both",
        "kafka.tls.cert_file: /nope/c.pem",
        "kafka.sasl.mechanism: a SASL protocol needs a mechanism",
        "kafka.sasl.username",
        "kafka.sasl.password_file: a SASL protocol needs a password",
    ] {
        assert!(errors.contains(expected), "{expected:?} in {errors}");
    }

    let errors = load("[kafka.sasl]\nusername = \"u\"\n", &[], &[])
        .unwrap_err()
        .to_string();
    assert!(
        errors.contains("kafka.sasl: set, but kafka.security_protocol is unset"),
        "{errors}"
    );

    let errors = load(
        "[kafka]\nsecurity_protocol = \"ssl\"\n[kafka.client]\n\"security.protocol\" = \"ssl\"\n",
        &[],
        &[],
    )
    .unwrap_err()
    .to_string();
    assert!(
        errors.contains("kafka.client.\"security.protocol\": also set"),
        "{errors}"
    );
}

#[test]
fn nearest_needs_an_encoder_and_the_token_limit_a_range() {
    let errors = load(
        "",
        &[],
        &["engine.strategy=nearest", "engine.embedding_model=none"],
    )
    .unwrap_err()
    .0;
    assert!(
        errors
            .iter()
            .any(|e| e.contains("engine.strategy: nearest")),
        "{errors:?}"
    );
    let config = load("", &[], &["engine.strategy=nearest"]).unwrap();
    assert!(config.engine_config().strategy.reads_meaning());
    for bad in ["0", "513"] {
        let set = format!("engine.embedding_max_tokens={bad}");
        let errors = load("", &[], &[set.as_str()]).unwrap_err().0;
        assert!(
            errors
                .iter()
                .any(|e| e.contains("engine.embedding_max_tokens")),
            "{bad}: {errors:?}"
        );
    }
    let config = load("", &[], &["engine.embedding_max_tokens=128"]).unwrap();
    assert_eq!(config.engine.embedding_max_tokens, 128);
}

/// An environment of `vars` for [`default_state_dir`].
fn vars<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
    move |name| {
        vars.iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value.to_string())
    }
}

#[test]
fn the_default_state_folder_is_under_gorag_home_else_the_data_home() {
    let home = |v: &[(&str, &str)]| default_state_dir(vars(v)).map(|dir| dir.display().to_string());
    let everything = [
        ("GORAG_HOME", "/srv/gorag"),
        ("XDG_DATA_HOME", "/data"),
        ("HOME", "/home/ana"),
    ];
    assert_eq!(home(&everything).unwrap(), "/srv/gorag/state");
    assert_eq!(home(&everything[1..]).unwrap(), "/data/gorag/state");
    assert_eq!(
        home(&everything[2..]).unwrap(),
        "/home/ana/.local/share/gorag/state"
    );
    // Empty is unset; a relative XDG_DATA_HOME is ignored (the XDG specification).
    assert_eq!(
        home(&[
            ("GORAG_HOME", ""),
            ("XDG_DATA_HOME", "data"),
            ("HOME", "/h")
        ])
        .unwrap(),
        "/h/.local/share/gorag/state"
    );
}

#[test]
fn no_default_state_folder_is_never_the_working_directory() {
    assert_eq!(default_state_dir(vars(&[])), Err(NoStateDir));
    assert_eq!(
        default_state_dir(vars(&[("HOME", ""), ("XDG_DATA_HOME", "rel")])),
        Err(NoStateDir)
    );
    assert_eq!(
        default_state_dir(vars(&[("HOME", "relative/home")])),
        Err(NoStateDir)
    );
    // A relative GORAG_HOME would follow the working directory: asked for, not skipped.
    assert_eq!(
        default_state_dir(vars(&[("GORAG_HOME", "gorag"), ("HOME", "/home/ana")])),
        Err(NoStateDir)
    );
    let message = NoStateDir.to_string();
    assert!(message.starts_with("state.dir: not set"), "{message}");
    assert!(
        message.contains("set state.dir, or GORAG_HOME"),
        "{message}"
    );
}

#[test]
fn loading_fills_in_the_default_state_folder_and_a_set_one_wins() {
    let config = load("", &[("HOME", "/home/ana")], &[]).unwrap();
    assert_eq!(
        config.state.dir().unwrap(),
        Path::new("/home/ana/.local/share/gorag/state")
    );
    assert!(
        config
            .to_toml()
            .contains("\ndir = \"/home/ana/.local/share/gorag/state\""),
        "{}",
        config.to_toml()
    );
    let config = load(
        "[state]\ndir = \"/var/lib/gorag/state\"\n",
        &[("GORAG_HOME", "/srv/gorag")],
        &[],
    )
    .unwrap();
    assert_eq!(
        config.state.dir().unwrap(),
        Path::new("/var/lib/gorag/state")
    );
    let config = load("", &[("GORAG_HOME", "/srv/gorag")], &["state.dir=here"]).unwrap();
    assert_eq!(config.state.dir().unwrap(), Path::new("here"));
}

/// Commands that never open the state load without a folder for it; `state.dir()` says what
/// is missing to the one that does.
#[test]
fn a_missing_state_folder_is_an_error_only_where_it_is_read() {
    let config = load("", &[("GORAG__KAFKA__BROKERS", "k:9092")], &[]).unwrap();
    assert_eq!(config.state.dir(), Err(NoStateDir));
    assert!(
        !config.to_toml().contains("\ndir ="),
        "{}",
        config.to_toml()
    );
}
