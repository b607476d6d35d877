//! GraphRAG's community report, adapted: the LLM reads a community's keywords and a few of its
//! texts and proposes a class name and a one-sentence description. Without an LLM (or when its
//! answer cannot be read) the name stays the top keywords.

use crate::engine::prompt::{clip, Prompt};

/// Excerpts shown to the LLM, and how much of each.
const EXCERPTS: usize = 3;
const EXCERPT_CHARS: usize = 400;
/// Longest name kept from the answer.
const NAME_CHARS: usize = 60;

const REPORT_SYSTEM: &str = "You name categories of documents. You answer in exactly two \
lines: \"Name: \" followed by a class name of two to four words, then \"Description: \" followed \
by one sentence.";

/// The prompt asking for a community's name and description.
pub fn prompt(keywords: &[String], excerpts: &[String]) -> Prompt {
    let mut user = format!(
        "These documents share a theme that none of the existing classes covers.\nTheir \
         keywords: {}.\nSome of them:\n",
        keywords.join(", ")
    );
    for (i, excerpt) in excerpts.iter().take(EXCERPTS).enumerate() {
        user.push_str(&format!(
            "{}. {}\n",
            i + 1,
            clip(excerpt, EXCERPT_CHARS).trim()
        ));
    }
    user.push_str("Name this theme as a class and describe it.");
    Prompt {
        system: REPORT_SYSTEM.to_string(),
        user,
        max_tokens: 80,
        top_logprobs: None,
    }
}

/// The (name, description) in the LLM's answer; None when it has no usable name.
pub fn parse(answer: &str) -> Option<(String, Option<String>)> {
    let field = |prefix: &str| {
        answer.lines().find_map(|line| {
            let line = line.trim().trim_start_matches(['*', '-', '#', ' ']);
            let (head, rest) = line.split_once(':')?;
            head.trim()
                .eq_ignore_ascii_case(prefix)
                .then(|| {
                    rest.trim()
                        .trim_matches(['"', '*', '\'', '.', ' '])
                        .to_string()
                })
                .filter(|value| !value.is_empty())
        })
    };
    let name = field("name")?;
    let name = clip(&name, NAME_CHARS).trim().to_string();
    if !name.chars().any(char::is_alphanumeric) {
        return None;
    }
    let description = field("description").map(|d| format!("{d}."));
    Some((name, description))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_shows_keywords_and_a_few_clipped_excerpts() {
        let excerpts: Vec<String> = (0..5)
            .map(|i| format!("text {i} {}", "x".repeat(900)))
            .collect();
        let prompt = prompt(&["lava".into(), "crater".into()], &excerpts);
        assert!(prompt.user.contains("keywords: lava, crater."));
        assert!(prompt.user.contains("3. text 2"));
        assert!(!prompt.user.contains("4. text 3"));
        assert!(prompt.user.len() < 1600);
    }

    #[test]
    fn answers_are_read_leniently_and_refused_without_a_name() {
        assert_eq!(
            parse("Name: Volcanology\nDescription: Eruptions, lava flows and craters."),
            Some((
                "Volcanology".into(),
                Some("Eruptions, lava flows and craters.".into())
            ))
        );
        assert_eq!(
            parse("**Name:** \"Volcanic activity\"\n"),
            Some(("Volcanic activity".into(), None))
        );
        assert_eq!(parse("I cannot tell."), None);
        assert_eq!(parse("Name: ..."), None);
    }
}
