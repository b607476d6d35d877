//! How a compaction renumbers the index's id spaces: the kept items keep their order and take
//! the ids from 0 on, so every per-term and per-document table stays a dense `Vec`.

/// New ids for the items kept, in order (`None` for the dropped), made with `id`.
pub fn renumbering<T>(kept: impl Iterator<Item = bool>, id: impl Fn(u32) -> T) -> Vec<Option<T>> {
    let mut next = 0u32;
    kept.map(|keep| {
        keep.then(|| {
            next += 1;
            id(next - 1)
        })
    })
    .collect()
}

/// The items whose position `keep` accepts, in order.
pub fn keep_where<T>(items: Vec<T>, keep: impl Fn(usize) -> bool) -> Vec<T> {
    items
        .into_iter()
        .enumerate()
        .filter(|(at, _)| keep(*at))
        .map(|(_, item)| item)
        .collect()
}
