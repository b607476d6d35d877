pub mod desk;
pub mod fake_llm;
pub mod http;
pub mod in_process;
pub mod kafka;

/// The non-empty lines of `examples/stream/<name>` (the README's example stream).
#[allow(dead_code)] // each test binary uses its own subset
pub fn example(name: &str) -> Vec<String> {
    let path = format!("{}/examples/stream/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

/// A seeded linear congruential generator: synthetic streams that are the same every run.
#[allow(dead_code)]
pub struct Lcg(pub u64);

#[allow(dead_code)]
impl Lcg {
    pub fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
}

/// Support-ticket words the example rounds know: synthetic texts drawn from them get candidates.
#[allow(dead_code)]
pub const TICKET_WORDS: [&str; 41] = [
    "parcel",
    "tracking",
    "courier",
    "delivery",
    "address",
    "box",
    "invoice",
    "charged",
    "card",
    "refund",
    "payment",
    "bill",
    "password",
    "login",
    "account",
    "locked",
    "email",
    "reset",
    "warehouse",
    "late",
    "duplicate",
    "sign",
    "code",
    "damaged",
    "vat",
    "order",
    "weekend",
    "neighbour",
    "bank",
    "statement",
    "phone",
    "app",
    "verify",
    "motor",
    "battery",
    "screen",
    "blender",
    "dark",
    "mode",
    "tablet",
    "speaker",
];

/// `count` words of [`TICKET_WORDS`], drawn by `rng`.
#[allow(dead_code)]
pub fn ticket_words(rng: &mut Lcg, count: usize) -> Vec<&'static str> {
    (0..count)
        .map(|_| TICKET_WORDS[rng.next() as usize % TICKET_WORDS.len()])
        .collect()
}

/// `count` text events (ids `{prefix}00000`…) of `words` ticket words each, drawn
/// deterministically from `seed`.
#[allow(dead_code)]
pub fn ticket_texts(seed: u64, prefix: &str, count: usize, words: usize) -> Vec<String> {
    let mut rng = Lcg(seed);
    (0..count)
        .map(|i| {
            let text = ticket_words(&mut rng, words).join(" ");
            format!(r#"{{"id":"{prefix}{i:05}","text":"{text}"}}"#)
        })
        .collect()
}

/// A loopback port nothing listens on right now.
#[allow(dead_code)]
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}
pub mod secure_kafka;

/// The folder of the embedding model `name`: `variable` when set (then it must hold `file`),
/// else the folder gorag finds by name, or None (with the reason printed) when that holds no
/// model — under a plain `cargo test` such a test passes without running; scripts/test.sh sets
/// the variable.
#[allow(dead_code)]
pub fn model_folder(variable: &str, name: &str, file: &str) -> Option<std::path::PathBuf> {
    if let Some(dir) = std::env::var_os(variable).map(std::path::PathBuf::from) {
        assert!(
            dir.join(file).is_file(),
            "{variable}={} holds no {file}: run scripts/embedding-model.sh {name}",
            dir.display()
        );
        return Some(dir);
    }
    let dir = gorag::embed::EmbeddingModel::Named(name.to_string()).folder()?;
    if dir.join(file).is_file() {
        return Some(dir);
    }
    eprintln!(
        "skipped: no {name} in {} (scripts/embedding-model.sh {name} fetches it; \
         scripts/test.sh runs this test)",
        dir.display()
    );
    None
}

/// The metric families the Grafana dashboard (helm/gorag/dashboards/gorag.json) queries, without
/// their `_total`, `_bucket`, `_sum` or `_count` suffix.
#[allow(dead_code)]
pub fn dashboard_metric_families() -> std::collections::BTreeSet<String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/helm/gorag/dashboards/gorag.json"
    );
    let dashboard: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("dashboard"))
            .expect("dashboard JSON");
    let mut queried = std::collections::BTreeSet::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        for target in panel["targets"].as_array().expect("targets") {
            let expr = target["expr"].as_str().expect("expr");
            queried.extend(
                expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .filter(|word| word.starts_with("gorag_"))
                    .map(|name| {
                        ["_total", "_bucket", "_sum", "_count"]
                            .iter()
                            .find_map(|suffix| name.strip_suffix(suffix))
                            .unwrap_or(name)
                            .to_string()
                    }),
            );
        }
    }
    queried
}

/// A runtime for a test that is not async itself (the blocking desk client runs its own).
#[allow(dead_code)] // each test binary uses its own subset
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}
