//! An instant OpenAI-compatible server on loopback that answers every classification with its
//! first candidate: for throughput runs of `gorag serve` where the LLM must not be the limit
//! (scripts/bench-serve.sh). Prints its base URL on stdout, then serves until killed.
//!
//!     cargo run --release --example instant_llm

#[path = "../tests/support/fake_llm.rs"]
mod fake_llm;

use std::io::Write;

#[tokio::main]
async fn main() {
    let server = fake_llm::FakeLlm::start(fake_llm::Reply::FirstCandidate).await;
    println!("{}", server.url);
    let _ = std::io::stdout().flush();
    std::future::pending::<()>().await;
}
