//! The index's three id spaces, each its own type: a term's place in the vocabulary, a
//! document's place in the index, a label's position in the engine's label list.

use serde::{Deserialize, Serialize};

macro_rules! id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize,
            Deserialize,
        )]
        #[serde(transparent)]
        pub struct $name(pub u32);

        impl $name {
            /// The place in a `Vec` this id indexes.
            pub fn index(self) -> usize {
                self.0 as usize
            }

            /// The id of place `index`.
            pub fn at(index: usize) -> Self {
                Self(index as u32)
            }
        }
    };
}

id!(
    /// A term's place in the index's vocabulary (renumbered by a compaction).
    TermId
);
id!(
    /// A document's place in the index (renumbered by a compaction: valid until classified
    /// texts are taken back or evicted ones compacted away).
    DocId
);
id!(
    /// A label's position in the engine's label list (persisted in snapshots as the bare
    /// number).
    LabelPos
);
