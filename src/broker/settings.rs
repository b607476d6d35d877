//! How the broker is reached and which topics the service uses: the `[kafka]` and `[topics]`
//! sections of the configuration, owned by the seam that uses them (the configuration layer
//! re-exports them).

use serde::{Deserialize, Serialize};

use super::security::{ClientProperties, KafkaSecrets, SaslSection, SecurityProtocol, TlsSection};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct KafkaSection {
    /// `bootstrap.servers`.
    pub brokers: String,
    /// Consumer group of the texts topic.
    pub group_id: String,
    /// Create missing topics on start (labels with 1 partition, the others with
    /// `partitions`). Off when an operator manages topics.
    pub create_topics: bool,
    pub partitions: i32,
    pub replication_factor: i32,
    /// How often delivered offsets are committed (after the state store is flushed).
    pub commit_interval_ms: u64,
    /// How long startup waits for the brokers to answer before giving up (saying, every few
    /// seconds meanwhile, which address it tries and librdkafka's reason).
    pub startup_wait_secs: f64,
    /// How the brokers are reached: `plaintext`, `ssl`, `sasl_plaintext` or `sasl_ssl`
    /// (unset: librdkafka's default, plaintext, or `kafka.client."security.protocol"`).
    pub security_protocol: Option<SecurityProtocol>,
    /// `[kafka.tls]`: CA bundle, client certificate and key (mTLS).
    pub tls: TlsSection,
    /// `[kafka.sasl]`: mechanism, user, password file.
    pub sasl: SaslSection,
    /// Extra librdkafka properties for every client (secrets among them shown as `***`).
    pub client: ClientProperties,
    /// The secrets `tls` and `sasl` point at, read when the configuration is loaded.
    #[serde(skip)]
    pub secrets: KafkaSecrets,
}

impl Default for KafkaSection {
    fn default() -> Self {
        Self {
            brokers: "127.0.0.1:9092".into(),
            group_id: "gorag".into(),
            create_topics: true,
            partitions: 3,
            replication_factor: 1,
            commit_interval_ms: 1000,
            startup_wait_secs: 120.0,
            security_protocol: None,
            tls: TlsSection::default(),
            sasl: SaslSection::default(),
            client: ClientProperties::default(),
            secrets: KafkaSecrets::default(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TopicsSection {
    pub labels: String,
    pub texts: String,
    pub predictions: String,
    pub hallucinations: String,
    pub dead_letter: String,
    /// Every change to the graph, in the order all replicas apply it (1 partition).
    pub changelog: String,
    /// Proposed classes (keyed by proposal id; compacted).
    pub proposals: String,
}

impl TopicsSection {
    /// Every topic's name, in the order above.
    pub fn names(&self) -> [&str; 7] {
        [
            &self.labels,
            &self.texts,
            &self.predictions,
            &self.hallucinations,
            &self.dead_letter,
            &self.changelog,
            &self.proposals,
        ]
    }
}

impl Default for TopicsSection {
    fn default() -> Self {
        Self {
            labels: "gorag.labels".into(),
            texts: "gorag.texts".into(),
            predictions: "gorag.predictions".into(),
            hallucinations: "gorag.hallucinations".into(),
            dead_letter: "gorag.dlq".into(),
            changelog: "gorag.changelog".into(),
            proposals: "gorag.proposals".into(),
        }
    }
}

/// What the broker seam is given: the `[kafka]` and `[topics]` sections.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BrokerSettings {
    pub kafka: KafkaSection,
    pub topics: TopicsSection,
}
