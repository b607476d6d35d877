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
