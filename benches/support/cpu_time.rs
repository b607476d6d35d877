//! A criterion measurement of the CPU time the measuring thread ran (POSIX's thread CPU clock,
//! in nanoseconds), beside the default wall time: on a machine whose cores other work shares,
//! wall time counts the waits for a core and CPU time does not (a core shared with another
//! thread still runs slower). Only for work done on the measuring thread (an encoder on one
//! thread).

use criterion::measurement::{Measurement, ValueFormatter};
use criterion::Throughput;

/// CPU time of the calling thread.
pub struct ThreadCpuTime;

/// Nanoseconds the calling thread has run; 0 where the clock is missing.
fn ran_nanos() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a pointer to a live local.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    if status != 0 {
        return 0;
    }
    (now.tv_sec as u64) * 1_000_000_000 + now.tv_nsec as u64
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
