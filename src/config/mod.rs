//! `gorag serve` configuration, layered: defaults → TOML file → `GORAG__SECTION__KEY`
//! environment variables → `--set section.key=value` flags (later layers win).
//!
//! Every section is strict (`deny_unknown_fields`). Loading reports **every** problem at once,
//! each with the layer it came from: a bad key is dropped and deserialisation retried, so one
//! typo does not hide the next; then the values are checked together (e.g. distinct topics).
//! Secrets never come from the file and are never shown: the LLM API key is read from
//! `llm.api_key_file` or `$GORAG_LLM_API_KEY` / `$OPENAI_API_KEY`, the Kafka passwords from
//! `kafka.sasl.password_file` (or `$GORAG_KAFKA_SASL_PASSWORD`) and
//! `kafka.tls.key_password_file`; a secret librdkafka property under `kafka.client` is shown as
//! `***`, and an error about one never quotes its value.

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use toml::{Table, Value};

use crate::bounds::keys;

mod engine_section;
mod parts;
mod sections;
mod state_dir;
pub use crate::broker::security::*;
pub use crate::broker::settings::{KafkaSection, TopicsSection};
pub use engine_section::EngineSection;
pub use sections::*;
pub use state_dir::*;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServeConfig {
    pub kafka: KafkaSection,
    pub topics: TopicsSection,
    pub llm: LlmSection,
    pub engine: EngineSection,
    pub input: InputSection,
    /// The bounds on label events (`[labels]`).
    pub labels: LabelsSection,
    pub state: StateSection,
    pub admin: AdminSection,
    /// Emerging-class discovery (`[discovery]`): the pool of poorly explained texts, the
    /// community passes over it, and the proposals they publish.
    pub discovery: crate::discovery::DiscoveryConfig,
    /// The review desk (`gorag review`, `[review]`): its address, logins, claims, audits.
    pub review: ReviewSection,
}

/// Every problem found while loading, one per line.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct ConfigErrors(pub Vec<String>);

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} configuration error(s):", self.0.len())?;
        for error in &self.0 {
            writeln!(f, "  - {error}")?;
        }
        Ok(())
    }
}

/// The layers to merge.
#[derive(Debug, Default, Clone)]
pub struct Layers {
    pub file: Option<PathBuf>,
    /// (name, value) of the process environment; only `GORAG__…` names,
    /// `$GORAG_KAFKA_SASL_PASSWORD` and the folders the default `state.dir` goes under
    /// (`GORAG_HOME`, `XDG_DATA_HOME`, `HOME`: [`default_state_dir`]) are read.
    pub env: Vec<(String, String)>,
    /// `section.key=value` from `--set`.
    pub sets: Vec<String>,
}

const ENV_PREFIX: &str = "GORAG__";

/// Keys that moved (2026-12-06: each setting declared once, grouped by what it governs), with
/// where they are now: a configuration still using one is refused with its new name rather
/// than as an unknown key (docs/guide/configuration.md, "Keys that moved").
const MOVED: &[(&str, &str)] = &[
    ("engine.no_match_max_words", "engine.no_match.max_words"),
    ("engine.no_match_min_meaning", "engine.no_match.min_meaning"),
    (
        "engine.no_match_below_confidence",
        "engine.no_match.below_confidence",
    ),
    ("engine.ranking.learn_margin", "engine.learning.margin"),
    (
        "engine.ranking.learn_margin_agreeing",
        "engine.learning.margin_agreeing",
    ),
    ("engine.ranking.seen_capacity", "engine.capacity.seen"),
    (
        "engine.ranking.tentative_capacity",
        "engine.capacity.tentative",
    ),
];

/// A scalar written in an env var or flag: TOML syntax when it parses (numbers, booleans,
/// quoted strings, arrays), else the raw text as a string.
fn scalar(raw: &str) -> Value {
    match format!("v = {raw}").parse::<Table>() {
        Ok(mut table) => table
            .remove("v")
            .unwrap_or_else(|| Value::String(raw.into())),
        Err(_) => Value::String(raw.to_string()),
    }
}

fn set_path(root: &mut Table, path: &[String], value: Value) -> Result<(), String> {
    let (last, parents) = path.split_last().ok_or("empty key")?;
    let mut table = root;
    for part in parents {
        let entry = table
            .entry(part.clone())
            .or_insert_with(|| Value::Table(Table::new()));
        table = entry
            .as_table_mut()
            .ok_or_else(|| format!("`{part}` is not a section"))?;
    }
    table.insert(last.clone(), value);
    Ok(())
}

fn remove_path(root: &mut Table, path: &[String]) -> bool {
    let Some((last, parents)) = path.split_last() else {
        return false;
    };
    let mut table = root;
    for part in parents {
        match table.get_mut(part).and_then(Value::as_table_mut) {
            Some(next) => table = next,
            None => return false,
        }
    }
    table.remove(last).is_some()
}

/// librdkafka's property names contain dots (`security.protocol`): under `kafka.client` the
/// rest of a `--set` key (or of an environment name, `__`-separated) is one property name.
fn librdkafka_key(path: Vec<String>) -> Vec<String> {
    match path.as_slice() {
        [kafka, client, rest @ ..] if kafka == "kafka" && client == "client" && rest.len() > 1 => {
            vec![kafka.clone(), client.clone(), rest.join(".")]
        }
        _ => path,
    }
}

/// A flag's or variable's value: librdkafka properties are strings as written (`true`, `6000`),
/// everything else is read as a TOML scalar.
fn value_at(path: &[String], raw: &str) -> Value {
    if path.len() == 3 && path[0] == "kafka" && path[1] == "client" {
        Value::String(raw.to_string())
    } else {
        scalar(raw)
    }
}

impl ServeConfig {
    pub fn load(layers: &Layers) -> Result<Self, ConfigErrors> {
        let mut merged = Merged::default();
        if let Some(path) = &layers.file {
            merged.file(path);
        }
        for (name, raw) in &layers.env {
            if let Some(rest) = name.strip_prefix(ENV_PREFIX) {
                let path = rest.split("__").map(|p| p.to_ascii_lowercase()).collect();
                let source = format!("environment {name}");
                merged.put(path, raw, (&source, &source), "malformed name");
            }
        }
        for set in &layers.sets {
            let Some((key, raw)) = set.split_once('=') else {
                merged
                    .errors
                    .push(format!("--set {set}: expected section.key=value"));
                continue;
            };
            let path = key.trim().split('.').map(str::to_string).collect();
            let shown = if crate::secret::is_secret_key(key) {
                format!("--set {key}={}", crate::secret::SHOWN_AS)
            } else {
                format!("--set {set}")
            };
            let origin = format!("--set {key}");
            merged.put(path, raw.trim(), (&origin, &shown), "malformed key");
        }
        let Merged {
            mut root,
            origin,
            mut errors,
        } = merged;
        for (old, new) in MOVED {
            let path: Vec<String> = old.split('.').map(str::to_string).collect();
            if remove_path(&mut root, &path) {
                let from = origin.get(*old).map_or("", String::as_str);
                errors.push(format!("{old} ({from}): moved to {new}"));
            }
        }
        let mut config = deserialize_reporting_all(root, &origin, &mut errors);
        if let Some(config) = &mut config {
            config.check(&mut errors);
            let password_env = layers
                .env
                .iter()
                .find(|(name, _)| name == SASL_PASSWORD_ENV)
                .map(|(_, value)| value.as_str());
            let kafka = &config.kafka;
            config.kafka.secrets = SecurityCheck {
                protocol: kafka.security_protocol,
                tls: &kafka.tls,
                sasl: &kafka.sasl,
                client: &kafka.client,
            }
            .run(password_env, &mut errors);
            state_dir::fill_in(&mut config.state, &layers.env);
            if let Some(path) = &config.engine.calibrator {
                match crate::engine::confidence::Calibrator::read(path) {
                    Ok(calibrator) => config.engine.loaded_calibrator = Some(calibrator),
                    Err(error) => errors.push(format!(
                        "engine.calibrator: {error} (gorag calibrate --out writes one)"
                    )),
                }
            }
        }
        match config {
            Some(config) if errors.is_empty() => Ok(config),
            _ => Err(ConfigErrors(errors)),
        }
    }

    /// Checks that span fields, section by section.
    fn check(&self, errors: &mut Vec<String>) {
        self.check_topics(errors);
        self.check_kafka(errors);
        self.check_llm(errors);
        self.check_engine(errors);
        self.check_service(errors);
    }

    /// Every topic named, and no two the same.
    fn check_topics(&self, errors: &mut Vec<String>) {
        let t = &self.topics;
        let names = [
            ("topics.labels", &t.labels),
            ("topics.texts", &t.texts),
            ("topics.predictions", &t.predictions),
            ("topics.hallucinations", &t.hallucinations),
            ("topics.dead_letter", &t.dead_letter),
            ("topics.changelog", &t.changelog),
            ("topics.proposals", &t.proposals),
        ];
        for (i, (key, name)) in names.iter().enumerate() {
            if name.trim().is_empty() {
                errors.push(format!("{key}: must not be empty"));
            }
            if let Some((other, _)) = names[..i].iter().find(|(_, n)| n == name) {
                errors.push(format!("{key}: same topic as {other} ({name})"));
            }
        }
    }

    /// The broker connection and the client properties gorag owns.
    fn check_kafka(&self, errors: &mut Vec<String>) {
        if self.kafka.brokers.trim().is_empty() {
            errors.push("kafka.brokers: must not be empty".into());
        }
        if self.kafka.group_id.trim().is_empty() {
            errors.push("kafka.group_id: must not be empty".into());
        }
        if self.kafka.partitions < 1 {
            errors.push("kafka.partitions: must be at least 1".into());
        }
        if self.kafka.replication_factor < 1 {
            errors.push("kafka.replication_factor: must be at least 1".into());
        }
        if !(self.kafka.startup_wait_secs.is_finite() && self.kafka.startup_wait_secs > 0.0) {
            errors.push("kafka.startup_wait_secs: must be a positive number of seconds".into());
        }
        if self.kafka.commit_interval_ms == 0 {
            errors.push("kafka.commit_interval_ms: must be at least 1".into());
        }
        for reserved in ["bootstrap.servers", "group.id", "enable.auto.commit"] {
            if self.kafka.client.contains_key(reserved) {
                errors.push(format!("kafka.client.\"{reserved}\": set by gorag itself"));
            }
        }
    }

    /// The endpoint, the key's way there, the client's bounds and concurrency.
    fn check_llm(&self, errors: &mut Vec<String>) {
        errors.extend(self.llm.problems());
    }

    /// `[engine]`'s own checks, and discovery's.
    fn check_engine(&self, errors: &mut Vec<String>) {
        errors.extend(self.engine.problems());
        if self.discovery.enabled {
            if let Err(problem) = self.discovery.validate() {
                errors.push(format!("discovery.{problem}"));
            }
        }
    }

    /// Intake limits, state snapshots, the admin address and shutdown.
    fn check_service(&self, errors: &mut Vec<String>) {
        if self.input.max_in_flight == 0 {
            errors.push("input.max_in_flight: must be at least 1".into());
        }
        if self.input.backlog_mb == 0 {
            errors.push("input.backlog_mb: must be at least 1".into());
        }
        let bounds = self.bounds();
        for (key, value) in [
            (keys::TEXT_BYTES, bounds.text_bytes),
            (keys::TEXT_ID_BYTES, bounds.text_id_bytes),
            (keys::LABEL_ID_BYTES, bounds.label_id_bytes),
            (keys::NAME_BYTES, bounds.name_bytes),
            (keys::DESCRIPTION_BYTES, bounds.description_bytes),
            (keys::EXAMPLES_PER_LABEL, bounds.examples_per_label),
            (keys::LABELS_PER_ROUND, bounds.labels_per_round),
            (keys::ACTIVE_LABELS, bounds.active_labels),
        ] {
            if value == 0 {
                errors.push(format!("{key}: must be at least 1"));
            }
        }
        if self.state.snapshot_every == 0 {
            errors.push("state.snapshot_every: must be at least 1".into());
        }
        if !(self.state.snapshot_min_interval_secs.is_finite()
            && self.state.snapshot_min_interval_secs >= 0.0)
        {
            errors.push("state.snapshot_min_interval_secs: must be a number ≥ 0".into());
        }
        if self.admin.listen.parse::<std::net::SocketAddr>().is_err() {
            errors.push(format!(
                "admin.listen: {:?} is not an address such as 0.0.0.0:9464",
                self.admin.listen
            ));
        }
        if !(1..=AdminSection::MOST_CONNECTIONS).contains(&self.admin.max_connections) {
            errors.push(format!(
                "admin.max_connections: must be between 1 and {}",
                AdminSection::MOST_CONNECTIONS
            ));
        }
        // Above admin.max_connections it means admin.max_connections.
        if self.admin.max_connections_per_address == 0 {
            errors.push("admin.max_connections_per_address: must be at least 1".into());
        }
        let rate = self.admin.requests_per_second_per_address;
        if !(rate.is_finite() && rate > 0.0 && rate <= AdminSection::MOST_REQUESTS_PER_SECOND) {
            errors.push(format!(
                "admin.requests_per_second_per_address: must be a number above 0 and at most {}",
                AdminSection::MOST_REQUESTS_PER_SECOND
            ));
        }
        let header_secs = self.admin.header_read_timeout_secs;
        if !(header_secs.is_finite()
            && header_secs > 0.0
            && header_secs <= AdminSection::LONGEST_HEADER_READ_SECS)
        {
            errors.push(format!(
                "admin.header_read_timeout_secs: must be a number of seconds above 0 and at \
                 most {}",
                AdminSection::LONGEST_HEADER_READ_SECS
            ));
        }
        if !(self.state.drain_timeout_secs.is_finite() && self.state.drain_timeout_secs >= 0.0) {
            errors.push("state.drain_timeout_secs: must be a number ≥ 0".into());
        }
        if self.state.cache_mb == 0 {
            errors.push("state.cache_mb: must be at least 1".into());
        }
        self.review.check(errors);
    }

    /// The effective configuration as TOML (for `--print-config`).
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).unwrap_or_default()
    }
}

fn note_origins(table: &Table, prefix: &str, source: &str, origin: &mut HashMap<String, String>) {
    for (key, value) in table {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        if let Value::Table(inner) = value {
            note_origins(inner, &path, source, origin);
        }
        origin.insert(path, source.to_string());
    }
}

/// Deserialise, and on each error record it, drop the offending key and try again.
fn deserialize_reporting_all(
    mut root: Table,
    origin: &HashMap<String, String>,
    errors: &mut Vec<String>,
) -> Option<ServeConfig> {
    for _ in 0..64 {
        let value = Value::Table(root.clone());
        match serde_path_to_error::deserialize::<_, ServeConfig>(value) {
            Ok(config) => return Some(config),
            Err(error) => {
                let mut path: Vec<String> = error
                    .path()
                    .iter()
                    .map(|segment| segment.to_string())
                    .filter(|s| s != "?")
                    .collect();
                let full = error.inner().to_string();
                // toml appends "in `section`" on a second line; the key path says it better.
                let mut message = full.lines().next().unwrap_or_default().to_string();
                if path.iter().any(|part| crate::secret::is_secret_key(part)) {
                    // A type error quotes the value: not a secret's.
                    message = "not a valid value (a secret: not shown)".into();
                }
                // Some deserialisers report an unknown key at its parent.
                if let Some(name) = message
                    .strip_prefix("unknown field `")
                    .and_then(|rest| rest.split('`').next())
                {
                    if path.last().map(String::as_str) != Some(name) {
                        path.push(name.to_string());
                    }
                }
                let key = path.join(".");
                let from = origin
                    .get(&key)
                    .map(|source| format!(" (from {source})"))
                    .unwrap_or_default();
                errors.push(format!("{key}: {message}{from}"));
                if path.is_empty() || !remove_path(&mut root, &path) {
                    return None;
                }
            }
        }
    }
    None
}

/// The layers merged into one table so far, where each value came from, and every error.
#[derive(Default)]
struct Merged {
    root: Table,
    /// dotted key → where its value came from
    origin: HashMap<String, String>,
    errors: Vec<String>,
}

impl Merged {
    /// The file layer: the whole table (the first layer over the defaults).
    fn file(&mut self, path: &std::path::Path) {
        let shown = format!("file {}", path.display());
        match std::fs::read_to_string(path) {
            Ok(text) => match text.parse::<Table>() {
                Ok(table) => {
                    note_origins(&table, "", &shown, &mut self.origin);
                    self.root = table;
                }
                Err(e) => self
                    .errors
                    .push(format!("{shown}: {}", toml_error(&e, &text))),
            },
            Err(e) => self.errors.push(format!("{shown}: {e}")),
        }
    }

    /// One value from the environment or `--set`, at `path` (librdkafka keys rejoined):
    /// `origin` is where a later error about its value says it came from, `shown` how an error
    /// here names the input.
    fn put(
        &mut self,
        path: Vec<String>,
        raw: &str,
        (origin, shown): (&str, &str),
        malformed: &str,
    ) {
        let path = librdkafka_key(path);
        if path.iter().any(String::is_empty) {
            self.errors.push(format!("{shown}: {malformed}"));
            return;
        }
        match set_path(&mut self.root, &path, value_at(&path, raw)) {
            Ok(()) => {
                self.origin.insert(path.join("."), origin.to_string());
            }
            Err(e) => self.errors.push(format!("{shown}: {e}")),
        }
    }
}

/// A TOML syntax error's position and message, without the quoted line (which may hold a
/// secret).
fn toml_error(error: &toml::de::Error, text: &str) -> String {
    let position = error
        .span()
        .and_then(|span| text.get(..span.start))
        .map(|before| format!("line {}: ", before.matches('\n').count() + 1))
        .unwrap_or_default();
    format!("{position}{}", error.message().trim())
}

/// Read `GORAG__…` variables, `$GORAG_KAFKA_SASL_PASSWORD` and the default state folder's
/// variables ([`STATE_DIR_VARS`]) from the process environment. Bytes that are not UTF-8 read
/// as U+FFFD, except in a folder variable, which then counts as unset (better asked for than a
/// folder of another name).
pub fn process_env() -> Vec<(String, String)> {
    std::env::vars_os()
        .filter_map(|(name, value)| {
            let name = name.into_string().ok()?;
            if STATE_DIR_VARS.contains(&name.as_str()) {
                return Some((name, value.into_string().ok()?));
            }
            (name.starts_with(ENV_PREFIX) || name == SASL_PASSWORD_ENV)
                .then(|| (name, value.to_string_lossy().into_owned()))
        })
        .collect()
}

#[cfg(test)]
mod tests;
