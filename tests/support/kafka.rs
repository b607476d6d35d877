#![allow(dead_code)] // each test binary uses its own subset
//! The real broker (started by `scripts/kafka.sh`) and `gorag serve` as a child process.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Headers, Message};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::util::Timeout;
use rdkafka::{Offset, TopicPartitionList};

pub fn brokers() -> String {
    let brokers = std::env::var("GORAG_TEST_KAFKA").unwrap_or_else(|_| "127.0.0.1:9092".into());
    let reachable = brokers.split(',').any(|b| {
        b.parse()
            .ok()
            .and_then(|addr| {
                std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()
            })
            .is_some()
    });
    assert!(
        reachable,
        "no Kafka broker at {brokers}: start one with `scripts/kafka.sh start` (scripts/test.sh does)"
    );
    brokers
}

/// Names no other test (or earlier run) uses.
pub fn unique(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("t{}-{nanos}-{name}", std::process::id())
}

/// The topic names of one test, and `--set` flags that point a service at them.
pub struct Topics {
    pub labels: String,
    pub texts: String,
    pub predictions: String,
    pub hallucinations: String,
    pub dead_letter: String,
    pub changelog: String,
    pub proposals: String,
}

impl Topics {
    pub fn new(test: &str) -> Self {
        let base = unique(test);
        Self {
            labels: format!("{base}.labels"),
            texts: format!("{base}.texts"),
            predictions: format!("{base}.predictions"),
            hallucinations: format!("{base}.hallucinations"),
            dead_letter: format!("{base}.dlq"),
            changelog: format!("{base}.changelog"),
            proposals: format!("{base}.proposals"),
        }
    }

    pub fn sets(&self) -> Vec<String> {
        self.sets_with(&brokers())
    }

    /// [`Self::sets`] plus a state directory and a short commit interval: a service of its own.
    pub fn service_sets(&self, state: &Path) -> Vec<String> {
        let mut sets = self.sets();
        sets.push(format!("state.dir={}", state.display()));
        sets.push("kafka.commit_interval_ms=200".into());
        sets
    }

    /// [`Self::service_sets`] for one of the replicas of a two-partition texts topic, with a
    /// fake LLM at `llm_url`, discovery off, and `extra` settings last.
    #[allow(dead_code)] // each test binary uses its own subset
    pub fn replica_sets(&self, state: &Path, llm_url: &str, extra: &[&str]) -> Vec<String> {
        let mut sets = self.service_sets(state);
        sets.extend([
            "kafka.partitions=2".into(),
            format!("llm.url={llm_url}"),
            "llm.ask_below=1".into(),
            "llm.model=fake-model".into(),
            "discovery.enabled=false".into(),
        ]);
        sets.extend(extra.iter().map(|s| s.to_string()));
        sets
    }

    /// The same, for a broker other than the shared one (a test's own [`Broker`]).
    pub fn sets_with(&self, brokers: &str) -> Vec<String> {
        vec![
            format!("topics.labels={}", self.labels),
            format!("topics.texts={}", self.texts),
            format!("topics.predictions={}", self.predictions),
            format!("topics.hallucinations={}", self.hallucinations),
            format!("topics.dead_letter={}", self.dead_letter),
            format!("topics.changelog={}", self.changelog),
            format!("topics.proposals={}", self.proposals),
            format!("kafka.group_id={}.group", self.texts),
            format!("kafka.brokers={brokers}"),
            // Tests run side by side: each service takes a free admin port.
            "admin.listen=127.0.0.1:0".to_string(),
        ]
    }
}

pub struct Service {
    child: Child,
    pub log: PathBuf,
}

impl Service {
    /// Start `gorag serve` with these `--set` flags; its log goes to `<dir>/serve-<n>.log`.
    pub fn start(dir: &Path, sets: &[String]) -> Self {
        Self::start_with_env(dir, sets, &[])
    }

    /// Start with extra environment variables (e.g. `OTEL_*`).
    pub fn start_with_env(dir: &Path, sets: &[String], env: &[(&str, String)]) -> Self {
        let n = std::fs::read_dir(dir).map(|d| d.count()).unwrap_or(0);
        let log = dir.join(format!("serve-{n}.log"));
        let file = std::fs::File::create(&log).expect("log file");
        let mut command = Command::new(env!("CARGO_BIN_EXE_gorag"));
        command.arg("serve");
        for set in sets {
            command.arg("--set").arg(set);
        }
        let child = command
            .env("GORAG_LOG", "gorag=debug,warn")
            .env("GORAG_LOG_FORMAT", "text")
            .env_remove("GORAG_CONFIG")
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .expect("start gorag serve");
        Self { child, log }
    }

    /// Wait until the service has created its topics, read the labels topic and subscribed.
    pub fn wait_ready(&mut self) {
        self.wait_for_log("serving");
    }

    /// Wait until the service's log contains `text`.
    pub fn wait_for_log(&mut self, text: &str) {
        self.wait_for_log_count(text, 1);
    }

    /// Wait until the service's log contains `text` at least `count` times.
    pub fn wait_for_log_count(&mut self, text: &str, count: usize) {
        let started = Instant::now();
        while self.log_text().matches(text).count() < count {
            assert!(
                self.is_running(),
                "gorag serve exited:\n{}",
                self.log_text()
            );
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "gorag serve logged {text:?} fewer than {count} times within 60 s:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The admin port's address, from the service's log.
    pub fn admin_address(&mut self) -> String {
        self.wait_for_log("admin port");
        let log = self.log_text();
        log.lines()
            .find(|l| l.contains("admin port"))
            .and_then(|l| l.split("address=").nth(1))
            .and_then(|rest| rest.split_whitespace().next())
            .map(str::to_string)
            .unwrap_or_else(|| panic!("no admin address in:\n{log}"))
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("kill");
        assert!(status.success(), "kill -{signal} failed");
    }

    /// Wait at most `limit` for the process to end on its own.
    pub fn exit_within(&mut self, limit: Duration) -> (std::process::ExitStatus, String) {
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return (status, self.log_text());
            }
            assert!(
                started.elapsed() < limit,
                "gorag serve still running after {limit:?}:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGTERM, then wait at most `limit` for the process to end, whatever its exit code.
    pub fn terminate_within(&mut self, limit: Duration) -> (std::process::ExitStatus, String) {
        self.signal("TERM");
        self.exit_within(limit)
    }

    /// SIGTERM, then wait for a clean exit.
    pub fn stop(mut self) -> String {
        self.signal("TERM");
        let started = Instant::now();
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => {
                    let log = self.log_text();
                    assert!(status.success(), "gorag serve exited with {status}:\n{log}");
                    return log;
                }
                Ok(None) if started.elapsed() < Duration::from_secs(60) => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                _ => {
                    let _ = self.child.kill();
                    panic!("gorag serve did not stop within 60 s:\n{}", self.log_text());
                }
            }
        }
    }

    /// SIGKILL: no drain, no commit, no flush.
    pub fn kill(mut self) {
        self.signal("KILL");
        let _ = self.child.wait();
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

pub async fn publish(topic: &str, records: &[(Option<&str>, Vec<u8>)]) {
    publish_to(&brokers(), topic, records).await;
}

pub async fn publish_to(brokers: &str, topic: &str, records: &[(Option<&str>, Vec<u8>)]) {
    let producer: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("enable.idempotence", "true")
        // Room for the bad-input corpus's 10 MB texts (the topic must allow them too).
        .set("message.max.bytes", "16777216")
        .create()
        .expect("producer");
    // All in flight at once (the idempotent producer keeps their order), then await them.
    let sends = records.iter().map(|(key, value)| {
        let mut record = FutureRecord::to(topic).payload(value.as_slice());
        if let Some(key) = key {
            record = record.key(key.as_bytes());
        }
        producer.send(record, Timeout::After(Duration::from_secs(30)))
    });
    for result in futures::future::join_all(sends).await {
        result.map_err(|(e, _)| e).expect("publish");
    }
}

/// Publish JSON lines keyed by their `id` / `round` / `label` field.
pub async fn publish_json(topic: &str, lines: &[String]) {
    publish_json_to(&brokers(), topic, lines).await;
}

pub async fn publish_json_to(brokers: &str, topic: &str, lines: &[String]) {
    let records: Vec<(Option<String>, Vec<u8>)> = lines
        .iter()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).unwrap_or_default();
            let key = ["id", "round", "label"]
                .iter()
                .find_map(|f| value.get(*f).and_then(|v| v.as_str()).map(str::to_string));
            (key, line.as_bytes().to_vec())
        })
        .collect();
    let borrowed: Vec<(Option<&str>, Vec<u8>)> = records
        .iter()
        .map(|(k, v)| (k.as_deref(), v.clone()))
        .collect();
    publish_to(brokers, topic, &borrowed).await;
}

#[derive(Debug, Clone)]
pub struct Record {
    pub key: Option<String>,
    pub partition: i32,
    pub offset: i64,
    pub headers: HashMap<String, String>,
    pub value: Vec<u8>,
}

impl Record {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.value).expect("JSON record")
    }
}

/// Read a topic from the beginning until `done(records)` or the timeout.
pub fn read_until(
    topic: &str,
    timeout: Duration,
    done: impl FnMut(&[Record]) -> bool,
) -> Vec<Record> {
    read_until_from(&brokers(), topic, timeout, done)
}

pub fn read_until_from(
    brokers: &str,
    topic: &str,
    timeout: Duration,
    mut done: impl FnMut(&[Record]) -> bool,
) -> Vec<Record> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("group.id", unique("reader"))
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    let started = Instant::now();
    // The topic may not exist yet: the service creates it.
    let partitions = loop {
        let metadata = consumer
            .fetch_metadata(Some(topic), Duration::from_secs(5))
            .expect("metadata");
        let ids: Vec<i32> = metadata
            .topics()
            .iter()
            .filter(|t| t.name() == topic)
            .flat_map(|t| t.partitions().iter().map(|p| p.id()))
            .collect();
        if !ids.is_empty() {
            break ids;
        }
        assert!(started.elapsed() < timeout, "topic {topic} never appeared");
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut assignment = TopicPartitionList::new();
    for p in partitions {
        assignment
            .add_partition_offset(topic, p, Offset::Beginning)
            .expect("assign");
    }
    consumer.assign(&assignment).expect("assign");
    drop(assignment);
    let mut records = Vec::new();
    while !done(&records) && started.elapsed() < timeout {
        match consumer.poll(Duration::from_millis(200)) {
            Some(Ok(message)) => {
                let headers = message
                    .headers()
                    .map(|headers| {
                        headers
                            .iter()
                            .map(|h| {
                                let value = h.value.unwrap_or_default();
                                (
                                    h.key.to_string(),
                                    String::from_utf8_lossy(value).into_owned(),
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                records.push(Record {
                    key: message
                        .key()
                        .map(|k| String::from_utf8_lossy(k).into_owned()),
                    partition: message.partition(),
                    offset: message.offset(),
                    headers,
                    value: message.payload().unwrap_or_default().to_vec(),
                });
            }
            Some(Err(error)) => panic!("reading {topic}: {error}"),
            None => {}
        }
    }
    records
}

/// Publish the example round 1 and its four texts, and read the predictions until the four
/// are in (for at most `limit`).
#[allow(dead_code)] // each test binary uses its own subset
pub async fn predict_the_first_round(topics: &Topics, limit: Duration) -> Vec<Record> {
    publish_json(&topics.labels, &super::example("round-1.jsonl")).await;
    publish_json(&topics.texts, &super::example("texts-1.jsonl")).await;
    tokio::task::block_in_place(|| {
        read_until(&topics.predictions, limit, |r| predicted_ids(r).len() >= 4)
    })
}

/// Distinct `text_id`s among prediction records.
pub fn predicted_ids(records: &[Record]) -> std::collections::HashSet<String> {
    records
        .iter()
        .filter_map(|r| {
            r.json()
                .get("text_id")
                .and_then(|v| v.as_str())
                .map(str::to_string)
        })
        .collect()
}

/// `gorag state --dir` of a stopped service.
pub fn state_of(dir: &Path) -> serde_json::Value {
    let started = Instant::now();
    loop {
        let output = Command::new(env!("CARGO_BIN_EXE_gorag"))
            .args(["state", "--dir"])
            .arg(dir)
            .output()
            .expect("gorag state");
        if output.status.success() {
            return serde_json::from_slice(&output.stdout).expect("state JSON");
        }
        // sled releases its lock a moment after the process exits.
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "gorag state failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Create a topic with `partitions` and topic configs (e.g. `max.message.bytes`) before the
/// service would create it with the defaults.
pub async fn create_topic(brokers: &str, topic: &str, partitions: i32, configs: &[(&str, &str)]) {
    use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
    let admin: AdminClient<rdkafka::client::DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .create()
        .expect("admin client");
    let mut new = NewTopic::new(topic, partitions, TopicReplication::Fixed(1));
    for (key, value) in configs {
        new = new.set(key, value);
    }
    let results = admin
        .create_topics([&new], &AdminOptions::new())
        .await
        .expect("create topic");
    for result in results {
        result
            .map_err(|(t, e)| format!("{t}: {e}"))
            .expect("topic created");
    }
}

/// A broker of a test's own (so stopping it disturbs no other test): `nisshi` from
/// `$GORAG_NISSHI` (set by the scripts to the build `scripts/kafka.sh install` made), else from
/// PATH, on a free loopback port, with its working directory in `dir`.
pub struct Broker {
    child: Option<Child>,
    pub address: String,
    dir: PathBuf,
    storage: String,
    starts: usize,
}

impl Broker {
    /// `storage`: e.g. `memory://nisshi/`, or `sqlite://nisshi.db` (a file in `dir`: survives a
    /// restart).
    pub fn start(dir: &Path, storage: &str) -> Self {
        let port = super::free_port();
        let mut broker = Self {
            child: None,
            address: format!("127.0.0.1:{port}"),
            dir: dir.to_path_buf(),
            storage: storage.to_string(),
            starts: 0,
        };
        broker.spawn();
        broker
    }

    fn spawn(&mut self) {
        let url = format!("tcp://{}", self.address);
        let binary = std::env::var("GORAG_NISSHI").unwrap_or_else(|_| "nisshi".into());
        self.starts += 1;
        let log = std::fs::File::create(self.dir.join(format!("broker-{}.log", self.starts)))
            .expect("broker log");
        let child = Command::new(&binary)
            .args([
                "broker",
                "--listener-url",
                &url,
                "--advertised-listener-url",
                &url,
            ])
            .args(["--storage-engine", &self.storage])
            .args(["--group-initial-rebalance-delay", "0s"])
            .current_dir(&self.dir)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("start {binary} (scripts/kafka.sh install): {e}"));
        self.child = Some(child);
        let started = Instant::now();
        while std::net::TcpStream::connect(&self.address).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "broker did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stop: SIGTERM (a clean shutdown) or SIGKILL (a crash); wait until it has exited.
    pub fn stop(&mut self, signal: &str) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill")
                .args([format!("-{signal}"), child.id().to_string()])
                .status();
            let started = Instant::now();
            while matches!(child.try_wait(), Ok(None)) {
                if started.elapsed() > Duration::from_secs(20) {
                    let _ = child.kill();
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    /// Start again on the same port and storage.
    pub fn restart(&mut self) {
        self.spawn();
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
