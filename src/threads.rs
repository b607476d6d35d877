//! Mapping over the machine's cores: a batch of texts to classify (the service's loop), a
//! round's examples to encode (the embedding signal). Scoped threads, so `f` may borrow.

use std::sync::{Mutex, PoisonError};

/// The cores this process may use, asked once (it reads cgroup files on every call).
pub fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// `f` over `items` on up to `threads` scoped threads, in order (each thread a contiguous
/// chunk). A chunk whose thread the OS refused is mapped on the calling thread.
pub fn in_threads<T: Send, R: Send>(
    items: Vec<T>,
    threads: usize,
    f: impl Fn(T) -> R + Sync,
) -> Vec<R> {
    if threads <= 1 {
        return items.into_iter().map(f).collect();
    }
    let per_thread = items.len().div_ceil(threads).max(1);
    // Each chunk in a slot its thread takes it from, so that a chunk whose thread cannot be
    // started is still there to map here.
    let mut items = items.into_iter().peekable();
    let mut chunks: Vec<Mutex<Option<Vec<T>>>> = Vec::with_capacity(threads);
    while items.peek().is_some() {
        chunks.push(Mutex::new(Some(items.by_ref().take(per_thread).collect())));
    }
    let take = |chunk: &Mutex<Option<Vec<T>>>| {
        chunk
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .unwrap_or_default()
    };
    let f = &f;
    std::thread::scope(|scope| {
        let running: Vec<_> = chunks
            .iter()
            .map(|chunk| {
                std::thread::Builder::new().spawn_scoped(scope, move || {
                    take(chunk).into_iter().map(f).collect::<Vec<_>>()
                })
            })
            .collect();
        running
            .into_iter()
            .zip(&chunks)
            .flat_map(|(thread, chunk)| match thread {
                Ok(thread) => match thread.join() {
                    Ok(mapped) => mapped,
                    // A panic in `f` is a bug: let it surface as it would here.
                    Err(panic) => std::panic::resume_unwind(panic),
                },
                Err(error) => {
                    tracing::debug!(%error, "no thread for a chunk; mapped on the calling thread");
                    take(chunk).into_iter().map(f).collect()
                }
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_threads_keeps_the_order_of_its_items() {
        for threads in [0, 1, 2, 3, 8] {
            for n in [0, 1, 2, 5, 17] {
                let items: Vec<usize> = (0..n).collect();
                let mapped = in_threads(items, threads, |i| i * 10);
                assert_eq!(
                    mapped,
                    (0..n).map(|i| i * 10).collect::<Vec<_>>(),
                    "{threads} {n}"
                );
            }
        }
    }
}
