pub mod fake_llm;
pub mod http;
pub mod kafka;

/// The non-empty lines of `examples/stream/<name>` (the README's example stream).
#[allow(dead_code)] // each test binary uses its own subset
pub fn example(name: &str) -> Vec<String> {
    let path = format!("{}/examples/stream/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

/// A seeded linear congruential generator: synthetic streams that are the same every run.
#[allow(dead_code)]
pub struct Lcg(pub u64);

#[allow(dead_code)]
impl Lcg {
    pub fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
}
