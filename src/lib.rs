//! gorag: graph-based online retrieval-augmented generation (GORAG) for dynamic few-shot text
//! classification.
//!
//! - [`engine`]: the pure, synchronous algorithm (TF-IDF, keywords, graph, Steiner tree, the
//!   retrieval index and ranked scores with TopoRAG's proximity, prompts, the LLM's choice and
//!   answer matching, confidence-gated online indexing);
//! - [`llm`]: the OpenAI-compatible client (retries, cache, accounting);
//! - [`classify`]: the async step sequence for one text;
//! - [`eval`]: the paper's evaluation protocol;
//! - [`cli`]: the `gorag` command.

pub mod classify;
pub mod cli;
pub mod config;
pub mod engine;
pub mod eval;
pub mod events;
pub mod llm;
pub mod store;
pub mod stream;
pub mod telemetry;
