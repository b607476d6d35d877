//! Metrics move only inside an internal event's `emit` (docs/design/architecture.md,
//! "Telemetry's typed events"): no instrument of `telemetry::metrics::Instruments` is updated anywhere but in an
//! `impl InternalEvent for …` block, the one place that also writes the happening's log line.
//! `src/telemetry/instruments.rs`, which makes, registers and zeroes the instruments, is the one
//! file left out. The compiler already keeps the instruments from code outside an `emit` (only
//! `Metrics::emit` lends them); this test states it, and reads telemetry's own files too.

use super::blocks::{blocks_only, walk_blocks};
use super::sources;

/// The file that makes the instruments (and sets the series known in advance to zero).
const INSTRUMENTS_FILE: &str = "src/telemetry/instruments.rs";

/// Calls that move (or create) a series.
const UPDATES: [&str; 7] = [
    ".inc()",
    ".inc_by(",
    ".dec()",
    ".dec_by(",
    ".set(",
    ".observe(",
    ".get_or_create(",
];

/// The instruments' names: the fields of `pub struct Instruments`.
fn instrument_names() -> Vec<String> {
    let text = std::fs::read_to_string(INSTRUMENTS_FILE).expect("readable source");
    let code = blocks_only(&text);
    let body = code
        .split("pub struct Instruments {")
        .nth(1)
        .and_then(|rest| rest.split('}').next())
        .unwrap_or_default();
    body.lines()
        .filter_map(|line| line.trim().strip_prefix("pub "))
        .filter_map(|field| field.split(':').next())
        .map(|name| name.trim().to_string())
        .collect()
}

/// The receiver of the call at `at` (the chain of names, calls and fields before it:
/// `instruments.consumer_lag.get_or_create(…)` before `.set(`), read backwards.
fn receiver(code: &str, at: usize) -> &str {
    let bytes = code.as_bytes();
    let mut start = at;
    while start > 0 {
        let c = bytes[start - 1];
        if c == b')' {
            // Past the call's arguments, to its opening parenthesis.
            let mut level = 0usize;
            while start > 0 {
                start -= 1;
                match bytes[start] {
                    b')' => level += 1,
                    b'(' => {
                        level -= 1;
                        if level == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
            }
        } else if c.is_ascii_alphanumeric() || b"_.:?&* \t\r\n".contains(&c) {
            start -= 1;
        } else {
            break;
        }
    }
    &code[start..at]
}

/// Whether an item's header (the text before its `{`) opens an internal event's impl.
fn opens_an_emit(header: &str) -> bool {
    let item = header.rsplit(']').next().unwrap_or(header).trim_start();
    item.starts_with("impl") && item.contains("InternalEvent for ")
}

/// Every metric update in `code` outside an `impl InternalEvent for …` block, as its receiver
/// and call; and how many there are inside one.
fn updates_outside_emits(code: &str, instruments: &[String]) -> (Vec<String>, usize) {
    let (mut outside, mut inside) = (Vec::new(), 0);
    // A block's frame: whether it is (or is inside) an event's impl.
    walk_blocks(
        code,
        |header, frames: &[bool]| frames.last().copied().unwrap_or(false) || opens_an_emit(header),
        |at, frames| {
            let Some(call) = UPDATES.iter().find(|call| code[at..].starts_with(**call)) else {
                return;
            };
            let chain = receiver(code, at);
            let names_an_instrument = chain
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .any(|name| instruments.iter().any(|i| i == name));
            if !names_an_instrument {
                return;
            }
            if frames.last().copied().unwrap_or(false) {
                inside += 1;
            } else {
                let chain: String = chain.split_whitespace().collect();
                outside.push(format!("{chain}{call}"));
            }
        },
    );
    (outside, inside)
}

#[test]
fn metrics_move_only_in_an_internal_event_s_emit() {
    let instruments = instrument_names();
    assert!(
        instruments.len() >= 20 && instruments.iter().any(|i| i == "label_events"),
        "the instruments' names, read from {INSTRUMENTS_FILE}: {instruments:?}"
    );
    let (mut outside, mut inside) = (Vec::new(), 0);
    for path in sources() {
        if path == std::path::Path::new(INSTRUMENTS_FILE) {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("readable source");
        let (found, emitted) = updates_outside_emits(&blocks_only(&text), &instruments);
        inside += emitted;
        outside.extend(
            found
                .into_iter()
                .map(|update| format!("{}: {update}", path.display())),
        );
    }
    assert!(
        outside.is_empty(),
        "metrics updated outside an InternalEvent's emit (make the happening an event):\n{}",
        outside.join("\n")
    );
    // The reader found the updates the events do make.
    assert!(inside >= 30, "{inside} metric updates found in emits");
}

#[test]
fn prometheus_client_is_used_by_telemetry_only() {
    let floor = std::path::Path::new("src/telemetry");
    let outside: Vec<String> = sources()
        .into_iter()
        .filter(|path| !path.starts_with(floor))
        .filter(|path| {
            let text = std::fs::read_to_string(path).expect("readable source");
            blocks_only(&text).contains("prometheus_client")
        })
        .map(|path| path.display().to_string())
        .collect();
    assert!(
        outside.is_empty(),
        "prometheus_client used outside {floor:?}: {outside:?}"
    );
}

/// The reader tells an update in an event's `emit` from one elsewhere, through calls, label
/// sets and attributes, and leaves other `set`s alone.
#[test]
fn updates_are_found_outside_emits_only() {
    let instruments = vec!["consumer_lag".to_string(), "label_events".to_string()];
    let code = blocks_only(
        "#[derive(Debug)]\nimpl<'a> InternalEvent for Lag<'a> {\n    fn emit(self, i: &Instruments) {\n        \
         i.consumer_lag.get_or_create(&PartitionLabel { partition: 1 }).set(3);\n        \
         if true { i.label_events.inc(); }\n    }\n}\n\
         fn stray(m: &Instruments) { m.label_events.inc(); }\n\
         fn config(c: &mut ClientConfig) { c.set(\"group.id\", \"x\"); }\n",
    );
    let (outside, inside) = updates_outside_emits(&code, &instruments);
    assert_eq!(outside, ["m.label_events.inc()"]);
    assert_eq!(inside, 3);
}
