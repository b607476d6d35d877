//! `gorag review`: the review desk (docs/design/review-desk.md). People answer what gorag is
//! unsure of — predictions that need review, a share of decided ones as audits, proposals of
//! new classes — from a web page, while the stream runs.
//!
//! - [`queue`]: what waits, what is answered, who holds what (pure, synchronous).

pub mod queue;
