//! The Kafka clients of the operator commands (`publish`, `tail`, `labels import`, `correct`,
//! `proposals`, `report`, `topics create`), built from the configuration as the service builds
//! its own: `kafka.brokers`, and `kafka.client` for SASL and TLS, from `--config`, the
//! environment and `--set`. A broker that does not answer is named within seconds.

use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::StreamConsumer;
use rdkafka::producer::{FutureProducer, Producer};

use super::config_args::ConfigArgs;
use crate::config::{self, ServeConfig};
use crate::stream::kafka::{self, Noted};

/// How long a command waits for a broker to answer before saying none does.
const BROKER_WAIT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Default, Args)]
pub struct KafkaArgs {
    /// The brokers, `host:port[,…]` (the same as `--set kafka.brokers=…`; default: the
    /// configuration's, else `$GORAG_BROKERS`, else 127.0.0.1:9092).
    #[arg(long)]
    pub brokers: Option<String>,
    #[command(flatten)]
    pub config: ConfigArgs,
}

impl KafkaArgs {
    /// The configuration, `--brokers` applied last.
    pub fn load(&self) -> Result<ServeConfig> {
        self.load_with(&[])
    }

    /// The configuration with a command's own flags (`section.key=value`) applied last.
    /// `$GORAG_BROKERS` is the weakest environment setting: `GORAG__KAFKA__BROKERS`, `--set`
    /// and `--brokers` all beat it.
    pub fn load_with(&self, flags: &[String]) -> Result<ServeConfig> {
        let mut env = config::process_env();
        if let Ok(brokers) = std::env::var("GORAG_BROKERS") {
            env.insert(0, ("GORAG__KAFKA__BROKERS".to_string(), brokers));
        }
        let mut overrides: Vec<String> = flags.to_vec();
        overrides.extend(self.brokers.iter().map(|b| format!("kafka.brokers={b}")));
        self.config.load_with_env(env, &overrides)
    }
}

/// The settings every client starts from (brokers, `kafka.client`).
pub fn client_config(config: &ServeConfig) -> ClientConfig {
    kafka::client_config(config)
}

/// An idempotent producer that has reached a broker.
pub fn producer(config: &ServeConfig) -> Result<FutureProducer<Noted>> {
    let producer: FutureProducer<Noted> = client_config(config)
        .set("enable.idempotence", "true")
        .create_with_context(Noted)
        .context("creating the producer")?;
    ensure_broker(producer.client(), config)?;
    Ok(producer)
}

/// A consumer (group `group`, nothing committed) that has reached a broker.
pub fn consumer(config: &ServeConfig, group: &str) -> Result<StreamConsumer<Noted>> {
    let consumer: StreamConsumer<Noted> = client_config(config)
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .create_with_context(Noted)
        .context("creating the consumer")?;
    // A consumer serves librdkafka's log lines (where the reason a broker refused us is) only
    // when polled: ask through a producer, whose own thread serves them.
    drop(producer(config)?);
    Ok(consumer)
}

/// Fail within [`BROKER_WAIT`] when no broker answers, naming the address and librdkafka's
/// reason (refused, not resolved, SASL authentication failed, …): the client would otherwise
/// wait minutes in silence.
pub fn ensure_broker<C: rdkafka::ClientContext>(
    client: &rdkafka::client::Client<C>,
    config: &ServeConfig,
) -> Result<()> {
    let answered = tokio::task::block_in_place(|| client.fetch_metadata(None, BROKER_WAIT));
    if let Err(error) = answered {
        let reason = kafka::broker_trouble().unwrap_or_else(|| error.to_string());
        anyhow::bail!(
            "no Kafka broker answered at {} within {} s ({reason}): start one (scripts/kafka.sh \
             start runs the local broker), give its address with --brokers or --set \
             kafka.brokers=HOST:PORT, and its security settings with --set \
             kafka.client.KEY=VALUE (e.g. security.protocol, sasl.mechanism)",
            config.kafka.brokers,
            BROKER_WAIT.as_secs()
        );
    }
    Ok(())
}
