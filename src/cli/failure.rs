//! How a failed command reports itself: one paragraph — what failed and why (the error and its
//! causes, joined), then what to do about it — on stderr, and a backtrace only when
//! `RUST_BACKTRACE` (or `RUST_LIB_BACKTRACE`) asks for one.
//!
//! The advice is chosen from the error's type (typed library errors, downcast), so it names the
//! setting or command that fixes the problem rather than repeating the message.

use std::backtrace::BacktraceStatus;

use crate::broker::commands::CommandError;
use crate::broker::{BrokerError, BrokerErrorKind, ClientError};
use crate::config::ConfigErrors;
use crate::eval::dataset::DatasetError;
use crate::events::taxonomy::TaxonomyErrors;
use crate::llm::{AttemptError, LlmError, SetupError};
use crate::serve::ServeError;
use crate::store::StoreError;

/// The paragraph printed for a failed command (without backtrace).
pub fn render(error: &anyhow::Error) -> String {
    let mut what = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        let text = text.trim_end();
        // Wrappers often repeat their cause's text (`#[error("… {0}")]`): say it once.
        if what.contains(text) {
            continue;
        }
        if !what.is_empty() {
            what.push_str(if what.ends_with(':') { " " } else { ": " });
        }
        what.push_str(text);
    }
    match advice(error) {
        Some(advice) => format!("error: {what}\n  what to do: {advice}"),
        None => format!("error: {what}"),
    }
}

/// The backtrace, when the environment asked for one and it was captured.
pub fn backtrace(error: &anyhow::Error) -> Option<String> {
    let trace = error.backtrace();
    (trace.status() == BacktraceStatus::Captured).then(|| trace.to_string())
}

/// What to do about the first cause gorag knows.
fn advice(error: &anyhow::Error) -> Option<String> {
    error.chain().find_map(|cause| {
        if cause.is::<ConfigErrors>() {
            return Some(CONFIG.to_string());
        }
        if cause.is::<TaxonomyErrors>() {
            return Some(TAXONOMY.to_string());
        }
        if let Some(e) = cause.downcast_ref::<DatasetError>() {
            return Some(dataset(e).to_string());
        }
        if let Some(e) = cause.downcast_ref::<ServeError>() {
            return serve(e);
        }
        if let Some(e) = cause.downcast_ref::<StoreError>() {
            return Some(store(e).to_string());
        }
        if let Some(e) = cause.downcast_ref::<SetupError>() {
            return setup(e);
        }
        if let Some(e) = cause.downcast_ref::<LlmError>() {
            return Some(llm(e).to_string());
        }
        if let Some(e) = cause.downcast_ref::<CommandError>() {
            return match e {
                CommandError::Client(e) => client(e),
                CommandError::NoBroker { .. } | CommandError::Refused { .. } => None,
                CommandError::Broker { .. } | CommandError::ReadBack { .. } => {
                    Some(KAFKA.to_string())
                }
            };
        }
        if cause.is::<BrokerError>() {
            return Some(KAFKA.to_string());
        }
        None
    })
}

const CONFIG: &str =
    "fix the keys listed, in the file given with --config, the GORAG__SECTION__KEY \
    environment variables or --set section.key=value; `gorag serve --print-config` shows the \
    merged configuration and docs/guide/configuration.md, \"Every key\", describes each key.";

const KAFKA: &str = "check the broker address (--set kafka.brokers=HOST:PORT, --brokers, \
    GORAG__KAFKA__BROKERS or kafka.brokers in the file given with --config), its security \
    settings (kafka.security_protocol, [kafka.tls], [kafka.sasl]: docs/guide/security.md) and \
    that the broker is reachable from here.";

/// `gorag serve` has no `--brokers`: its address is a setting.
const SERVE_KAFKA: &str = "check the broker address (--set kafka.brokers=HOST:PORT, \
    GORAG__KAFKA__BROKERS or kafka.brokers in the file given with --config) and that the \
    broker is reachable from here; the log lines above carry librdkafka's own reason.";

const SERVE_TOPIC: &str = "gorag cannot change a topic's partitions: delete the topic with \
    your broker's tools, then run `gorag topics create` (with serve's --config/--set) before \
    anything publishes to it — it creates every topic with the layout serve needs, as serve, \
    labels import, correct and publish to a labels topic also do; a broker that auto-creates \
    topics gives them its default partition count — or use other names (--set \
    topics.labels=…, --set topics.changelog=…).";

const TAXONOMY: &str = "fix the lines listed: one row per example, columns label (required), \
    name, description, example and round; docs/guide/serve.md, \"Labels from a file\", shows \
    both formats, and --dry-run checks a file without publishing it.";

const DATASET_LAYOUT: &str = "a dataset folder holds <k>shot/r<n>/train.tsv and test.tsv \
    (dev.tsv to tune), one `label<TAB>text` per line; docs/guide/eval.md, \"Your own data\", \
    shows how to lay out a CSV that way.";

fn dataset(error: &DatasetError) -> &'static str {
    match error {
        DatasetError::NoHeldOut { .. } => {
            "add a test.tsv to that round (or a dev.tsv for --held-out dev), or choose fewer \
             rounds with --rounds."
        }
        _ => DATASET_LAYOUT,
    }
}

/// A broker client's error: said as the service says the same.
fn client(error: &ClientError) -> Option<String> {
    match error {
        ClientError::Kafka(context, e) => serve(&ServeError::Kafka(context, e.clone())),
        ClientError::Topic(message) => serve(&ServeError::Topic(message.clone())),
        ClientError::PollThread(_) | ClientError::BlockingTask(_) => None,
    }
}

fn serve(error: &ServeError) -> Option<String> {
    match error {
        ServeError::Kafka(_, e) if e.kind() == BrokerErrorKind::ClientConfig => Some(
            "fix or remove that librdkafka property under kafka.client (GORAG__KAFKA__CLIENT__…), \
             or the kafka.tls / kafka.sasl key it comes from (docs/guide/security.md); this \
             build's librdkafka has TLS and SASL SCRAM-SHA-256/512 and PLAIN, not GSSAPI or \
             OAUTHBEARER."
                .to_string(),
        ),
        ServeError::TopicLayout { .. } => Some(SERVE_TOPIC.to_string()),
        // Its message ends with the fix.
        ServeError::BrokerRefused { .. } => None,
        ServeError::Kafka(..)
        | ServeError::Topic(_)
        | ServeError::Stalled(..)
        | ServeError::BrokersUnreachable { .. } => Some(SERVE_KAFKA.to_string()),
        ServeError::Admin(listen, _) => Some(format!(
            "another process holds {listen}? choose another address with \
             admin.listen (GORAG__ADMIN__LISTEN)."
        )),
        // These say what to do themselves, or are covered by their cause.
        _ => None,
    }
}

fn store(error: &StoreError) -> &'static str {
    match error {
        StoreError::Locked { .. } => {
            "each instance needs its own state.dir: stop the other gorag serve or point this one \
             elsewhere (GORAG__STATE__DIR)."
        }
        StoreError::Format { .. } | StoreError::Corrupt { .. } | StoreError::Snapshot(_) => {
            "move the state directory (state.dir, or classify's --state) aside and start again: \
             gorag serve rebuilds its state from the changelog topic, gorag classify from the \
             labels file (texts it learned before are not in it); docs/design/formats.md."
        }
        StoreError::Sled(_) => "check that state.dir is on a writable disk with free space.",
    }
}

fn setup(error: &SetupError) -> Option<String> {
    match error {
        SetupError::ApiKeyFile { .. } => Some(
            "the file named by --api-key-file (llm.api_key_file) must exist and be readable; \
             or set OPENAI_API_KEY."
                .to_string(),
        ),
        SetupError::Timeout(_) => {
            Some("give --llm-timeout (llm.timeout_secs) a positive number.".to_string())
        }
        // Each problem names its key and bound; the key's refusal names both ways out.
        SetupError::Invalid(_) | SetupError::Client(LlmError::KeyTransport(_)) => None,
        SetupError::Client(e) => Some(llm(e).to_string()),
    }
}

fn llm(error: &LlmError) -> &'static str {
    match error {
        LlmError::Exhausted {
            last: AttemptError::Transport(_) | AttemptError::Timeout(_),
            ..
        } => {
            "is the LLM server up? start the local one (scripts/llm.sh start), point --llm \
             (llm.url) at yours, or run retrieval-only with --llm none."
        }
        LlmError::Rejected { .. } => {
            "the endpoint refused the request: check --model (llm.model) and the API key."
        }
        _ => "check the LLM endpoint (--llm, llm.url) and its logs.",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn causes_are_joined_once_and_advice_follows() {
        let error = anyhow::Error::new(DatasetError::NoRounds(PathBuf::from("data/1shot")))
            .context("loading the dataset");
        let text = render(&error);
        assert_eq!(
            text.lines().next(),
            Some("error: loading the dataset: data/1shot: no round folders r1, r2, … found")
        );
        assert!(text.contains("what to do: a dataset folder holds <k>shot/r<n>/train.tsv"));
        assert_eq!(text.lines().count(), 2);
    }

    #[test]
    fn a_wrapper_repeating_its_cause_is_said_once() {
        let inner = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let error = anyhow::Error::new(inner).context("reading x: no such file");
        assert_eq!(render(&error), "error: reading x: no such file");
    }

    #[test]
    fn configuration_errors_keep_their_list_and_name_the_fix() {
        let error = anyhow::Error::new(ConfigErrors(vec![
            "engine.bogus: unknown field".into(),
            "kafka.brokers: expected a string".into(),
        ]));
        let text = render(&error);
        assert!(text.starts_with("error: 2 configuration error(s):\n  - engine.bogus"));
        assert!(text.contains("what to do: fix the keys listed"));
        assert!(
            !text.contains("\n\n"),
            "no blank line inside the paragraph: {text:?}"
        );
    }

    #[test]
    fn an_unknown_error_gets_no_invented_advice() {
        let error = anyhow::anyhow!("something else");
        assert_eq!(render(&error), "error: something else");
    }

    #[test]
    fn an_unreachable_llm_names_the_ways_out() {
        let error = anyhow::Error::new(LlmError::Exhausted {
            attempts: 3,
            last: AttemptError::Transport("connection refused".into()),
        });
        assert!(render(&error).contains("--llm none"));
    }
}
