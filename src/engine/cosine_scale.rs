//! How the engine reads an encoder's cosines: from the cosine its unrelated texts have
//! (`TextEncoder::unrelated_cosine`), so that weights and thresholds set for one model mean
//! the same for a model whose cosines crowd near 1 (docs/design/embedding-signal.md).

/// Reads a cosine so that the encoder's unrelated-texts cosine is 0 and 1 is 1.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CosineScale {
    unrelated: f64,
}

impl CosineScale {
    /// The scale of an encoder whose unrelated texts have cosine `unrelated`.
    pub(crate) fn of(unrelated: f64) -> Self {
        // Outside [0, 1) the reading would divide by zero or flip the order: read as is.
        Self {
            unrelated: if (0.0..0.99).contains(&unrelated) {
                unrelated
            } else {
                0.0
            },
        }
    }

    pub(crate) fn read(self, cosine: f64) -> f64 {
        if self.unrelated == 0.0 {
            return cosine;
        }
        (cosine - self.unrelated) / (1.0 - self.unrelated)
    }

    /// [`Self::read`] for a cosine with the prototype of `count` examples whose mean has length
    /// `mean_norm`. Were every vector the model's common part (the unrelated cosine's square
    /// root along one direction) plus a part of its own, this is the cosine of the own parts:
    /// the common part would otherwise count more the more examples a label has (five
    /// unrelated examples' prototype reads 0.87 to an unrelated text under a model whose
    /// unrelated cosine is 0.79). One example: the same as [`Self::read`].
    pub(crate) fn read_prototype(self, cosine: f64, mean_norm: f64, count: usize) -> f64 {
        let u = self.unrelated;
        if u == 0.0 {
            return cosine;
        }
        // The own parts' mean is at least as long as that of mutually unrelated examples.
        let own = (mean_norm * mean_norm - u).max((1.0 - u) / count.max(1) as f64);
        (cosine * mean_norm - u) / ((1.0 - u).sqrt() * own.sqrt())
    }
}
