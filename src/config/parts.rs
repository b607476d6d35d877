//! What the parts of gorag read from the configuration, each in its own terms: the engine's
//! settings, how a saved state comes back, the bounds on every input.

use super::ServeConfig;
use crate::bounds::Bounds;
use crate::engine::EngineConfig;
use crate::reopen::Restoring;

impl ServeConfig {
    /// The engine's configuration (`[engine]`, and when to ask the LLM from `[llm]`).
    pub fn engine_config(&self) -> EngineConfig {
        EngineConfig {
            ask_below: self.llm.ask_below,
            ..self.engine.engine_config()
        }
    }

    /// How a saved state comes back with these settings.
    pub fn restoring(&self) -> Restoring<'_> {
        Restoring {
            engine: self.engine_config(),
            pool_capacity: self.discovery.pool_capacity,
            model: &self.engine.embedding_model,
            max_tokens: self.engine.embedding_max_tokens,
        }
    }

    /// The bounds every input keeps (`[input]`, `[labels]`).
    pub fn bounds(&self) -> Bounds {
        Bounds {
            text_bytes: self.input.max_text_bytes,
            text_id_bytes: self.input.max_id_bytes,
            label_id_bytes: self.labels.max_id_bytes,
            name_bytes: self.labels.max_name_bytes,
            description_bytes: self.labels.max_description_bytes,
            examples_per_label: self.labels.max_examples,
            labels_per_round: self.labels.max_per_round,
            active_labels: self.labels.max_active,
        }
    }
}
