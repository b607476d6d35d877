pub mod fake_llm;
pub mod http;
pub mod kafka;
