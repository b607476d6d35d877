//! gorag: graph-based online retrieval-augmented generation (GORAG) for dynamic few-shot text
//! classification.
//!
//! - [`engine`]: the pure, synchronous algorithm (TF-IDF, keywords, graph, Steiner tree, the
//!   retrieval index and ranked scores with TopoRAG's proximity, prompts, the LLM's choice and
//!   answer matching, confidence-gated online indexing);
//! - [`llm`]: the OpenAI-compatible client (retries, cache, accounting, one setup for eval and
//!   serve);
//! - [`one_text`]: one text's steps, retrieval-augmented generation, around the pure engine (LLM
//!   keywords, prepare, LLM answer, conclude), run in a row by `gorag eval` and apart by the
//!   service;
//! - [`eval`]: the paper's evaluation protocol;
//! - [`events`]: the public events (input and output), their decoding and JSON Schemas, and the
//!   events a classified text turns into;
//! - [`discovery`]: emerging classes (unexplained texts, the pool, communities, proposals);
//! - [`broker`]: the broker seam, the only place that knows rdkafka (Kafka, or an in-process
//!   broker for tests), with its own settings, errors and positions;
//! - [`clock`]: the wall clock in milliseconds;
//! - [`position`]: a record's place in a topic (partition, offset);
//! - [`serve`]: `gorag serve` over the broker seam (intake, a text's pipeline, the state's replica, delivery, stats, the
//!   loop);
//! - [`state`]: the replicated state (engine + discovery pool), its updates, its digest, and in
//!   `state::codec` every persisted format with the compatibility policy;
//! - [`classify`]: `gorag classify`'s session, the state driven from files;
//! - [`review`]: `gorag review`, the review desk;
//! - [`input`]: the one CSV/JSONL reader;
//! - [`secret`]: values never shown (passwords, keys), read from files;
//! - [`bounds`]: the limits every input keeps, and the cutting of error texts;
//! - [`store`]: the state store trait, its sled implementation and an in-memory one;
//! - [`embed`]: the sentence encoders behind the embedding signal;
//! - [`reopen`]: a saved state reopened, the embedding signal attached, with the labels' vectors
//!   its store kept;
//! - [`config`]: layered configuration (file → env → flags);
//! - [`telemetry`]: logs, traces, Prometheus metrics, the admin port;
//! - [`cli`]: the `gorag` command.
//!
//! Each module uses only modules of the layers below its own (the table in `tests/layers.rs`,
//! which checks it: no import cycle); docs/design/architecture.md, "Layers", draws them.

pub mod bounds;
pub mod broker;
pub mod classify;
pub mod cli;
pub mod clock;
pub mod config;
pub mod discovery;
pub mod embed;
pub mod engine;
pub mod eval;
pub mod events;
pub mod input;
pub mod llm;
pub mod one_text;
pub mod position;
pub mod reopen;
pub mod review;
pub mod secret;
pub mod serve;
pub mod state;
pub mod store;
pub mod telemetry;
pub mod threads;
