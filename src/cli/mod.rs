//! Command-line interface (clap). Library code returns typed errors; `anyhow` lives here.

use clap::{Parser, Subcommand};

pub mod calibrate;
pub mod classify;
pub mod config_args;
pub mod correct;
pub mod eval;
pub mod failure;
pub mod kafka_clients;
pub mod labels;
pub mod labels_topic;
pub mod prediction_view;
pub mod printable;
pub mod proposals;
pub mod publish;
pub mod report;
pub mod review;
pub mod schemas;
pub mod serve;
pub mod state;
pub mod stop;
pub mod tail;
pub mod topics;

#[derive(Debug, Parser)]
#[command(
    name = "gorag",
    version,
    about = "Graph-based online RAG for dynamic few-shot text classification"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Classify texts from a file or stdin with labels from a file: one prediction per line,
    /// no broker needed (--state keeps what gorag learns between runs).
    Classify(Box<classify::ClassifyArgs>),
    /// Run the paper's DFSTC protocol on a dataset folder (`<k>shot/r<n>/{train,test}.tsv`).
    Eval(Box<eval::EvalArgs>),
    /// Fit the confidence calibrator on the per-text files of `gorag eval` runs on tuning data.
    Calibrate(calibrate::CalibrateArgs),
    /// Run the streaming service: labels and texts from Kafka, predictions to Kafka.
    Serve(serve::ServeArgs),
    /// Create the service's topics with the layout it needs (start order then does not matter).
    Topics(topics::TopicsArgs),
    /// Publish JSONL lines to a topic (rounds, texts).
    Publish(publish::PublishArgs),
    /// Print records of a topic (predictions, hallucinations, dead letters).
    Tail(tail::TailArgs),
    /// Show what a stopped service's state directory holds (digest, graph size, offsets).
    State(state::StateArgs),
    /// Write the events' JSON Schemas (or check they are up to date).
    Schemas(schemas::SchemasArgs),
    /// Draw a stopped service's labels as a map (HTML with SVG, and JSON), grouped into
    /// communities by the keywords they share.
    Report(report::ReportArgs),
    /// List the proposed classes (the proposals topic); accept or reject one.
    Proposals(proposals::ProposalsArgs),
    /// Correct a prediction: the text becomes an example of LABEL, and what gorag learned from
    /// its wrong prediction is taken back.
    Correct(correct::CorrectArgs),
    /// Manage labels: import a taxonomy file (CSV, JSONL) as round events.
    Labels(labels::LabelsArgs),
    /// Serve the review desk: a page where reviewers answer the predictions that need review,
    /// audits and proposals, while the stream runs.
    Review(review::ReviewArgs),
}

pub use eval::eval;
