//! A criterion measurement of the CPU time the measuring thread ran (Linux's
//! `/proc/thread-self/schedstat`, in nanoseconds), beside the default wall time: on a machine
//! whose cores other work shares, wall time counts the waits for a core and CPU time does not.
//! Only for work done on the measuring thread (an encoder on one thread).

use criterion::measurement::{Measurement, ValueFormatter};
use criterion::Throughput;

/// CPU time of the calling thread.
pub struct ThreadCpuTime;

/// Nanoseconds the calling thread has run; 0 where the kernel does not say.
fn ran_nanos() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Whether this machine reports a thread's CPU time.
pub fn available() -> bool {
    ran_nanos() > 0
}

impl Measurement for ThreadCpuTime {
    type Intermediate = u64;
    type Value = u64;

    fn start(&self) -> u64 {
        ran_nanos()
    }

    fn end(&self, started: u64) -> u64 {
        ran_nanos().saturating_sub(started)
    }

    fn add(&self, a: &u64, b: &u64) -> u64 {
        a + b
    }

    fn zero(&self) -> u64 {
        0
    }

    fn to_f64(&self, value: &u64) -> f64 {
        *value as f64
    }

    fn formatter(&self) -> &dyn ValueFormatter {
        &Nanos
    }
}

struct Nanos;

impl Nanos {
    fn unit(typical: f64) -> (f64, &'static str) {
        match typical {
            t if t < 1e3 => (1.0, "ns (cpu)"),
            t if t < 1e6 => (1e3, "µs (cpu)"),
            t if t < 1e9 => (1e6, "ms (cpu)"),
            _ => (1e9, "s (cpu)"),
        }
    }
}

impl ValueFormatter for Nanos {
    fn scale_values(&self, typical: f64, values: &mut [f64]) -> &'static str {
        let (divisor, unit) = Self::unit(typical);
        values.iter_mut().for_each(|v| *v /= divisor);
        unit
    }

    fn scale_throughputs(
        &self,
        _: f64,
        throughput: &Throughput,
        values: &mut [f64],
    ) -> &'static str {
        let per = match throughput {
            Throughput::Elements(n) | Throughput::Bytes(n) | Throughput::BytesDecimal(n) => *n,
            Throughput::Bits(n) => *n,
            Throughput::ElementsAndBytes { elements, .. } => *elements,
        } as f64;
        values.iter_mut().for_each(|v| *v = per * 1e9 / *v);
        "/s (cpu)"
    }

    fn scale_for_machines(&self, _: &mut [f64]) -> &'static str {
        "ns"
    }
}
