//! An instant OpenAI-compatible server on loopback that answers every classification with its
//! first candidate: for throughput runs of `gorag serve` where the LLM must not be the limit
//! (scripts/bench-serve.sh). Prints its base URL on stdout, then serves until killed. With a
//! number of milliseconds as argument, every answer takes that long (an endpoint of known
//! latency, for scale-out runs where the LLM is the limit).
//!
//!     cargo run --release --example instant_llm [delay_ms]

#[path = "../tests/support/fake_llm.rs"]
mod fake_llm;

use std::io::Write;

#[tokio::main]
async fn main() {
    let delay_ms: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(0);
    let reply = if delay_ms == 0 {
        fake_llm::Reply::FirstCandidate
    } else {
        fake_llm::Reply::FirstCandidateAfter(std::time::Duration::from_millis(delay_ms))
    };
    let server = fake_llm::FakeLlm::start(reply).await;
    println!("{}", server.url);
    let _ = std::io::stdout().flush();
    std::future::pending::<()>().await;
}
