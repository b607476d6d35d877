//! The engine alone on the texts of a `scripts/bench-serve.sh` run: its rounds (round 1 of
//! examples/stream unless a rounds file is given), then keywords → retrieval → (instant LLM:
//! first candidate) → online indexing for every text (under its verdict's label, as the
//! service learns it), in one thread, no Kafka. Prints texts/s, to compare with the service's
//! end-to-end figure.
//!
//!     cargo run --release --example bare_engine -- out/bench-serve/texts.jsonl [rounds.jsonl]

use std::time::Instant;

use gorag::bounds::Bounds;
use gorag::engine::{Engine, EngineConfig, NewLabel};
use gorag::events::{decode, LabelEvent};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: bare_engine <texts.jsonl> [rounds.jsonl]")?;
    let rounds = std::env::args()
        .nth(2)
        .unwrap_or_else(|| "examples/stream/round-1.jsonl".into());
    let round = std::fs::read_to_string(rounds)?;
    let mut engine = Engine::new(EngineConfig::default());
    for line in round.lines().filter(|l| !l.trim().is_empty()) {
        if let LabelEvent::Round { round, labels, .. } = decode::label_event(line.as_bytes())? {
            let labels: Vec<NewLabel> = labels.iter().map(NewLabel::from).collect();
            engine.apply_round(Some(&round), &labels)?;
        }
    }
    let texts: Vec<String> = std::fs::read_to_string(&path)?
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| decode::text_event(l.as_bytes(), &Bounds::default()).map(|e| e.text))
        .collect::<Result<_, _>>()?;
    let started = Instant::now();
    for text in &texts {
        let analysis = engine.analyzer().analyze(text);
        let retrieval = engine.retriever().retrieve(&analysis)?;
        let answer = retrieval.candidates.first().map(|c| c.label.as_str());
        let decision = engine.decisions().decide(&retrieval, answer);
        let verdict = engine.decisions().verdict(&retrieval, &decision);
        engine.learn(&analysis, &verdict.learn_as, verdict.confident);
    }
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "{{\"texts\": {}, \"seconds\": {:.3}, \"texts_per_s\": {:.1}, \"graph_nodes\": {}}}",
        texts.len(),
        seconds,
        texts.len() as f64 / seconds,
        engine.graph().node_count()
    );
    Ok(())
}
