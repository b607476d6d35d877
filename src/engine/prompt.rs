//! The prompts GORAG sends: classification, label description and keyword extraction.
//!
//! Each is a fixed system message followed by a user message, so an OpenAI-compatible server
//! that caches prompt prefixes reuses the system part across calls. The wording follows the
//! reference code's intent (list the classes, describe them, demand the class name only) in
//! this project's own words.

use serde::{Deserialize, Serialize};

/// One chat request, provider-neutral.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Prompt {
    pub system: String,
    pub user: String,
    /// Upper bound on the answer's length in tokens.
    pub max_tokens: u32,
}

const CLASSIFY_SYSTEM: &str = "You are a precise text classifier. You answer with exactly one \
class name copied from the list you are given, and nothing else.";

const DESCRIBE_SYSTEM: &str = "You write one short sentence that describes a category of \
documents, naming its typical topics.";

const KEYWORDS_SYSTEM: &str = "You extract keywords. You answer with a comma-separated list \
of short keywords taken from the passage, and nothing else.";

/// How a candidate label is shown to the model.
#[derive(Debug, Clone)]
pub struct ClassChoice<'a> {
    pub display: &'a str,
    pub description: Option<&'a str>,
}

/// The classification prompt: candidate classes, their descriptions when known, then the text
/// (or, in the `keyword-input` ablation, the text's keywords).
pub fn classification(choices: &[ClassChoice<'_>], body: &str, max_tokens: u32) -> Prompt {
    let mut user = String::from("Classify the text below into exactly one of these classes: ");
    let names: Vec<&str> = choices.iter().map(|c| c.display).collect();
    user.push_str(&names.join("; "));
    user.push_str(".\n");
    let described: Vec<String> = choices
        .iter()
        .filter_map(|c| {
            c.description
                .map(|d| format!("- {}: {}", c.display, d.trim()))
        })
        .collect();
    if !described.is_empty() {
        user.push_str("What distinguishes the classes:\n");
        user.push_str(&described.join("\n"));
        user.push('\n');
    }
    user.push_str(
        "Reply with only the name of one class from the list above, with no other words.\n\
         Text: ",
    );
    user.push_str(body);
    Prompt {
        system: CLASSIFY_SYSTEM.to_string(),
        user,
        max_tokens,
    }
}

/// Ask for a short description of a named class (indexed like a labelled example).
pub fn label_description(name: &str) -> Prompt {
    Prompt {
        system: DESCRIBE_SYSTEM.to_string(),
        user: format!("Describe the category \"{name}\" in one short sentence."),
        max_tokens: 32,
    }
}

/// Ask for keywords of a passage (the paper's LLM keyword mode).
pub fn keyword_extraction(passage: &str) -> Prompt {
    Prompt {
        system: KEYWORDS_SYSTEM.to_string(),
        user: format!("Extract the keywords of this passage:\n{passage}"),
        max_tokens: 64,
    }
}

/// Cut a text to at most `max_chars` characters on a character boundary, so one huge document
/// cannot overflow the model's context.
pub fn clip(text: &str, max_chars: usize) -> &str {
    match text.char_indices().nth(max_chars) {
        Some((byte, _)) => &text[..byte],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification_lists_classes_descriptions_and_text() {
        let choices = [
            ClassChoice {
                display: "machine learning",
                description: Some("learning from data"),
            },
            ClassChoice {
                display: "label 3",
                description: None,
            },
        ];
        let prompt = classification(&choices, "some text", 32);
        assert!(prompt
            .user
            .starts_with("Classify the text below into exactly one of these classes: machine learning; label 3.\n"));
        assert!(prompt
            .user
            .contains("- machine learning: learning from data"));
        assert!(!prompt.user.contains("- label 3"));
        assert!(prompt.user.ends_with("Text: some text"));
    }

    #[test]
    fn no_description_section_without_descriptions() {
        let choices = [ClassChoice {
            display: "label 0",
            description: None,
        }];
        assert!(!classification(&choices, "x", 8)
            .user
            .contains("distinguishes"));
    }

    #[test]
    fn clip_respects_char_boundaries() {
        assert_eq!(clip("héllo", 2), "hé");
        assert_eq!(clip("hi", 10), "hi");
    }
}
