//! No setting declared outside its owner: a configuration key is a field of the struct that
//! owns it, whose `#[arg]` makes it a `gorag eval` flag too; a command's own flag named like a
//! key would be a second declaration, with its own default and check, free to drift
//! (docs/maintainers.md, "Add a configuration key").

use std::path::Path;

use gorag::config::ServeConfig;
use toml::{Table, Value};

use super::sources;

/// Flags of the commands named like a key that are not a second declaration of it, and why.
const SAME_WORD: &[(&str, &str)] = &[
    (
        "brokers",
        "`--brokers` is a shortcut for `--set kafka.brokers=…`, read through the layers",
    ),
    (
        "listen",
        "`gorag review --listen` is a shortcut for `--set review.listen=…`",
    ),
    (
        "dir",
        "`gorag state` and `gorag report` open a state folder given by path, offline",
    ),
    (
        "labels",
        "a file of label names (`--labels`), not the labels topic",
    ),
    (
        "texts",
        "`gorag calibrate`'s files of per-text predictions, not the texts topic",
    ),
    (
        "strategy",
        "`gorag eval` compares several strategies; `engine.strategy` is one",
    ),
    (
        "audit_share",
        "`gorag eval` simulates audits on a share of each round; the desk's is live",
    ),
];

/// The last names of every key of the effective configuration.
fn key_names(table: &Table, out: &mut Vec<String>) {
    for (name, value) in table {
        match value {
            Value::Table(inner) if name != "client" => key_names(inner, out),
            _ => out.push(name.clone()),
        }
    }
}

/// (file, field) of every field of `src/cli/` that carries an `#[arg(…)]` (not `skip`).
fn flag_fields() -> Vec<(String, String)> {
    let mut fields = Vec::new();
    for path in sources() {
        if !path.starts_with(Path::new("src/cli")) {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("readable source");
        let mut flagged = false;
        for line in text.lines().map(str::trim) {
            if line.starts_with("#[arg(") && !line.starts_with("#[arg(skip") {
                flagged = true;
            } else if let Some(rest) = line.strip_prefix("pub ") {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if flagged && rest[name.len()..].starts_with(':') {
                    fields.push((path.display().to_string(), name));
                }
                flagged = false;
            } else if line.starts_with("fn ") || line.starts_with('}') {
                flagged = false;
            }
        }
    }
    fields
}

#[test]
fn no_setting_is_declared_outside_its_owner() {
    let table: Table = ServeConfig::default()
        .to_toml()
        .parse()
        .expect("the configuration is TOML");
    let mut keys = Vec::new();
    key_names(&table, &mut keys);
    let fields = flag_fields();
    assert!(
        fields.iter().any(|(_, name)| name == "shots"),
        "the reader finds the commands' flags: {fields:?}"
    );
    let twice: Vec<String> = fields
        .into_iter()
        .filter(|(_, name)| keys.contains(name))
        .filter(|(_, name)| !SAME_WORD.iter().any(|(word, _)| word == name))
        .map(|(file, name)| {
            format!(
                "{file}: --{} is a configuration key's",
                name.replace('_', "-")
            )
        })
        .collect();
    assert!(twice.is_empty(), "{}", twice.join("\n"));
}
