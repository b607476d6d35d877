//! Every configuration key is declared once with its default, its check and its doc: the
//! effective configuration of an empty file lists every key (each section has its defaults),
//! each key has a row in docs/guide/configuration.md, and a number key refuses a value that is
//! no number (`nan`) by name — the sign that its section's check reads it.

use gorag::config::{Layers, ServeConfig};
use toml::{Table, Value};

/// (dotted key, default value) of every leaf of the effective configuration; librdkafka's
/// free-form properties (`kafka.client`) are one key.
fn keys(table: &Table, prefix: &str, out: &mut Vec<(String, Value)>) {
    for (name, value) in table {
        let key = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        match value {
            Value::Table(inner) if key != "kafka.client" => keys(inner, &key, out),
            _ => out.push((key, value.clone())),
        }
    }
}

fn defaults() -> Vec<(String, Value)> {
    let config = ServeConfig::load(&Layers::default()).expect("the defaults load");
    let table: Table = config
        .to_toml()
        .parse()
        .expect("the effective configuration is TOML");
    let mut out = Vec::new();
    keys(&table, "", &mut out);
    out
}

/// Whether the guide documents `key`: as itself (`` `engine.top_k` ``), as the next name on a
/// row that starts its section (`` `engine.ranking.name_weight`, `.description_weight` ``), or,
/// for librdkafka's free-form properties, by their pattern.
fn documented(guide: &str, key: &str) -> bool {
    if guide.contains(&format!("`{key}`")) {
        return true;
    }
    if key == "kafka.client" {
        return guide.contains("`kafka.client.<property>`");
    }
    let Some((section, last)) = key.rsplit_once('.') else {
        return false;
    };
    guide.lines().any(|line| {
        line.starts_with('|')
            && line.contains(&format!("`{section}."))
            && line.contains(&format!("`.{last}`"))
    })
}

/// The pages whose tables list the keys: the configuration guide, and the security guide for
/// the connection's TLS and SASL keys.
const GUIDES: &[&str] = &["docs/guide/configuration.md", "docs/guide/security.md"];

#[test]
fn every_key_has_a_row_in_the_configuration_guide() {
    let guide: String = GUIDES
        .iter()
        .map(|page| std::fs::read_to_string(page).expect("the guide"))
        .collect();
    let missing: Vec<String> = defaults()
        .into_iter()
        .map(|(key, _)| key)
        .filter(|key| !documented(&guide, key))
        .collect();
    assert!(
        missing.is_empty(),
        "keys without a row in {GUIDES:?}: {missing:?}"
    );
}

#[test]
fn every_number_key_is_checked() {
    let floats: Vec<String> = defaults()
        .into_iter()
        .filter(|(_, value)| value.is_float())
        .map(|(key, _)| key)
        .collect();
    assert!(floats.len() > 20, "{floats:?}");
    let unchecked: Vec<String> = floats
        .into_iter()
        .filter(|key| {
            let layers = Layers {
                sets: vec![format!("{key}=nan")],
                ..Layers::default()
            };
            match ServeConfig::load(&layers) {
                Ok(_) => true,
                Err(errors) => !errors.0.iter().any(|e| e.starts_with(key.as_str())),
            }
        })
        .collect();
    assert!(
        unchecked.is_empty(),
        "number keys that accept nan (no check reads them): {unchecked:?}"
    );
}

/// A key that moved is refused with its new name, from whichever layer it came.
#[test]
fn a_moved_key_is_refused_with_its_new_name() {
    let layers = Layers {
        sets: vec!["engine.ranking.learn_margin=0.1".into()],
        env: vec![("GORAG__ENGINE__NO_MATCH_MAX_WORDS".into(), "2".into())],
        ..Layers::default()
    };
    let errors = ServeConfig::load(&layers).map_or_else(|e| e.0, |_| Vec::new());
    for (old, new) in [
        ("engine.ranking.learn_margin", "engine.learning.margin"),
        ("engine.no_match_max_words", "engine.no_match.max_words"),
    ] {
        assert!(
            errors
                .iter()
                .any(|e| e.starts_with(old) && e.ends_with(&format!("moved to {new}"))),
            "{old}: {errors:?}"
        );
    }
}
