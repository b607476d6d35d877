//! Reading a constrained choice: a numbered answer, or the LLM's belief per candidate from the
//! log-probabilities of its answer's first token, fused with the retrieval scores.
//!
//! Pure functions over strings and numbers; [`super::Decisions::decide_with_alternatives`] wires
//! them to labels and hallucination flags.

use super::text::normalise_label_text;

/// The candidate (0-based) a numbered answer names: its first number, if within 1..=`count`.
pub fn numbered(answer: &str, count: usize) -> Option<usize> {
    let digits: String = answer
        .trim_start()
        .trim_start_matches(['(', '[', '#'])
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    let n: usize = digits.parse().ok()?;
    (1..=count).contains(&n).then(|| n - 1)
}

/// The LLM's belief over the candidates, read from its answer's first token.
#[derive(Debug, Clone, PartialEq)]
pub struct Belief {
    /// Per candidate: the probability mass of first-token alternatives that begin its name (a
    /// token shared by several names counts for each), normalised over the candidates.
    pub per_candidate: Vec<f64>,
    /// Share of the alternatives' probability mass that begins some candidate's name: how much
    /// the model meant to answer from the list at all.
    pub on_list: f64,
}

/// None when no alternative begins any candidate's name.
pub fn belief(displays: &[&str], alternatives: &[(String, f64)]) -> Option<Belief> {
    let names: Vec<String> = displays.iter().map(|d| normalise_label_text(d)).collect();
    let mut mass = vec![0.0f64; names.len()];
    let (mut all, mut on_list) = (0.0f64, 0.0f64);
    for (token, logprob) in alternatives {
        let p = logprob.exp();
        all += p;
        let token = normalise_label_text(token);
        if token.is_empty() {
            continue;
        }
        let mut begins_one = false;
        for (i, name) in names.iter().enumerate() {
            if name.starts_with(&token) {
                mass[i] += p;
                begins_one = true;
            }
        }
        if begins_one {
            on_list += p;
        }
    }
    let total: f64 = mass.iter().sum();
    if total <= 0.0 {
        return None;
    }
    Some(Belief {
        per_candidate: mass.into_iter().map(|m| m / total).collect(),
        on_list: if all > 0.0 { on_list / all } else { 0.0 },
    })
}

/// The candidate the belief favours alone; None when the best is shared (a first token that
/// begins several names gives each the same mass, and says nothing of which the model meant).
pub fn favourite(belief: &[f64]) -> Option<usize> {
    let top = belief.iter().copied().fold(0.0f64, f64::max);
    let mut best = (0..belief.len()).filter(|&i| top > 0.0 && top - belief[i] <= 1e-9);
    match (best.next(), best.next()) {
        (Some(i), None) => Some(i),
        _ => None,
    }
}

/// A belief wholly on candidate `at` of `count` (an answer that named it, where no first
/// token began any name).
pub fn one_hot(count: usize, at: usize) -> Belief {
    Belief {
        per_candidate: (0..count)
            .map(|i| if i == at { 1.0 } else { 0.0 })
            .collect(),
        on_list: 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_answers_are_read_and_bounded() {
        assert_eq!(numbered("2", 5), Some(1));
        assert_eq!(numbered(" 3. physics", 5), Some(2));
        assert_eq!(numbered("(1)", 5), Some(0));
        assert_eq!(numbered("6", 5), None);
        assert_eq!(numbered("0", 5), None);
        assert_eq!(numbered("physics", 5), None);
    }

    #[test]
    fn a_favourite_is_the_belief_s_unshared_best() {
        assert_eq!(favourite(&[0.2, 0.7, 0.1]), Some(1));
        assert_eq!(favourite(&[0.45, 0.45, 0.1]), None);
        assert_eq!(favourite(&[0.1, 0.45, 0.45]), None);
        assert_eq!(favourite(&[1.0]), Some(0));
        assert_eq!(favourite(&[0.0, 0.0]), None);
        assert_eq!(favourite(&[]), None);
    }

    #[test]
    fn belief_follows_the_first_tokens_that_begin_each_name() {
        let alternatives = vec![
            (" machine".to_string(), (0.6f64).ln()),
            ("Foot".to_string(), (0.3f64).ln()),
            ("!".to_string(), (0.1f64).ln()),
        ];
        let b = belief(&["machine learning", "football", "cooking"], &alternatives).unwrap();
        assert!((b.per_candidate[0] - 0.6 / 0.9).abs() < 1e-9);
        assert!((b.per_candidate[1] - 0.3 / 0.9).abs() < 1e-9);
        assert_eq!(b.per_candidate[2], 0.0);
        assert!((b.on_list - 0.9).abs() < 1e-9);
        assert!(belief(&["cooking"], &alternatives).is_none());
    }
}
