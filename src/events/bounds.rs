//! A label event checked against the [`Bounds`] that need no state (lengths and counts within
//! the event); the bound on active labels in all ([`active_labels`]) needs the state's count,
//! and is checked where the event becomes an update (`crate::state::from_event`). Every front end checks an event here
//! before anything is applied: the service's labels forwarder (so the verdict goes into the
//! changelog, the same for every replica), `gorag classify` and `gorag labels import`.

use super::decode::{Reason, Rejection};
use super::{LabelEvent, LabelSpec};
use crate::bounds::{excerpt, keys, over_bytes, Bounds};

/// Whether `event` keeps every bound on one event; the rejection names the first bound passed,
/// its key, and the label it was passed by.
pub fn label_event(event: &LabelEvent, bounds: &Bounds) -> Result<(), Rejection> {
    match event {
        LabelEvent::Round { round, labels, .. } => {
            if let Some(over) = over_bytes(
                "the round id",
                round,
                bounds.label_id_bytes,
                keys::LABEL_ID_BYTES,
            ) {
                return Err(Rejection::over_limit(over));
            }
            if labels.len() > bounds.labels_per_round {
                return Err(Rejection::over_limit(format!(
                    "the round announces {} labels; the limit ({}) is {}: split it into rounds",
                    labels.len(),
                    keys::LABELS_PER_ROUND,
                    bounds.labels_per_round
                )));
            }
            labels.iter().try_for_each(|spec| label_spec(spec, bounds))
        }
        LabelEvent::AddExamples {
            label, examples, ..
        } => {
            label_id(label, bounds)?;
            examples_of(label, examples, bounds)
        }
        LabelEvent::RetireLabel { label, .. } => label_id(label, bounds),
        LabelEvent::Correct {
            text_id,
            label,
            text,
            reviewer,
            proposal,
            ..
        } => {
            if let Some(label) = label {
                label_id(label, bounds)?;
            }
            if let Some(over) = proposal.as_deref().and_then(|id| {
                over_bytes(
                    "the proposal id",
                    id,
                    bounds.label_id_bytes,
                    keys::LABEL_ID_BYTES,
                )
            }) {
                return Err(Rejection::over_limit(over));
            }
            if let Some(over) = reviewer.as_deref().and_then(|name| {
                over_bytes("the reviewer", name, bounds.name_bytes, keys::NAME_BYTES)
            }) {
                return Err(Rejection::over_limit(over));
            }
            if let Some(over) = over_bytes(
                "the text's id",
                text_id,
                bounds.text_id_bytes,
                keys::TEXT_ID_BYTES,
            ) {
                return Err(Rejection::over_limit(over));
            }
            if let Some(over) = over_bytes(
                "the corrected text",
                text,
                bounds.text_bytes,
                keys::TEXT_BYTES,
            ) {
                return Err(Rejection::over_limit(over));
            }
            Ok(())
        }
    }
}

/// Whether a round of `new` labels keeps the bound on active labels, `active` being active
/// before it.
pub fn active_labels(active: usize, new: usize, bounds: &Bounds) -> Result<(), Rejection> {
    let after = active + new;
    if after <= bounds.active_labels {
        return Ok(());
    }
    Err(Rejection::over_limit(format!(
        "the round would make {after} active labels ({active} active, {new} new); the limit \
         ({}) is {}: retire labels first, or raise the limit",
        keys::ACTIVE_LABELS,
        bounds.active_labels
    )))
}

fn label_id(label: &str, bounds: &Bounds) -> Result<(), Rejection> {
    match over_bytes(
        "the label id",
        label,
        bounds.label_id_bytes,
        keys::LABEL_ID_BYTES,
    ) {
        Some(over) => Err(Rejection::over_limit(over)),
        None => Ok(()),
    }
}

/// One label of a round: its id, name, description and examples.
pub fn label_spec(spec: &LabelSpec, bounds: &Bounds) -> Result<(), Rejection> {
    label_id(&spec.id, bounds)?;
    fit_to_show(spec)?;
    let of = |what: &str| format!("label {}: its {what}", excerpt(&spec.id));
    if let Some(over) = spec
        .name
        .as_deref()
        .and_then(|name| over_bytes(&of("name"), name, bounds.name_bytes, keys::NAME_BYTES))
    {
        return Err(Rejection::over_limit(over));
    }
    if let Some(over) = spec.description.as_deref().and_then(|description| {
        over_bytes(
            &of("description"),
            description,
            bounds.description_bytes,
            keys::DESCRIPTION_BYTES,
        )
    }) {
        return Err(Rejection::over_limit(over));
    }
    examples_of(&spec.id, &spec.examples, bounds)
}

/// A new label's id, name and description as [`super::label_id`] wants them (what they may
/// hold, not how long they are).
fn fit_to_show(spec: &LabelSpec) -> Result<(), Rejection> {
    let checked = super::label_id::check_id(&spec.id)
        .and_then(|()| {
            spec.name
                .as_deref()
                .map_or(Ok(()), super::label_id::check_name)
        })
        .and_then(|()| {
            spec.description
                .as_deref()
                .map_or(Ok(()), super::label_id::check_description)
        });
    checked.map_err(|unfit| {
        Rejection::new(
            Reason::InvalidRound,
            format!("label {}: {unfit}", excerpt(&spec.id)),
        )
    })
}

/// The examples one event gives a label: how many, and each one's length.
fn examples_of(label: &str, examples: &[String], bounds: &Bounds) -> Result<(), Rejection> {
    if examples.len() > bounds.examples_per_label {
        return Err(Rejection::over_limit(format!(
            "label {} is given {} examples at once; the limit ({}) is {}: send the rest in \
             add_examples events",
            excerpt(label),
            examples.len(),
            keys::EXAMPLES_PER_LABEL,
            bounds.examples_per_label
        )));
    }
    for (n, example) in examples.iter().enumerate() {
        let what = format!("label {}: its example {}", excerpt(label), n + 1);
        if let Some(over) = over_bytes(&what, example, bounds.text_bytes, keys::TEXT_BYTES) {
            return Err(Rejection::over_limit(over));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::decode::Reason;
    use crate::events::EVENT_VERSION;

    fn spec(id: &str) -> LabelSpec {
        LabelSpec {
            id: id.into(),
            name: Some("a name".into()),
            description: Some("what it is about".into()),
            examples: vec!["an example".into()],
        }
    }

    fn round(labels: Vec<LabelSpec>) -> LabelEvent {
        LabelEvent::Round {
            version: EVENT_VERSION,
            round: "r1".into(),
            labels,
        }
    }

    /// The key the rejection names, asserting it is `over_limit`.
    fn refused(event: &LabelEvent, bounds: &Bounds) -> String {
        let rejection = label_event(event, bounds).expect_err("over a bound");
        assert_eq!(rejection.reason, Reason::OverLimit, "{rejection}");
        assert!(rejection.message.len() <= 400, "{rejection}");
        rejection.message
    }

    #[test]
    fn an_event_within_every_bound_passes() {
        let bounds = Bounds::default();
        assert_eq!(
            label_event(&round(vec![spec("a"), spec("b")]), &bounds),
            Ok(())
        );
    }

    #[test]
    fn each_bound_of_a_round_is_named_when_passed() {
        let bounds = Bounds {
            text_bytes: 20,
            text_id_bytes: 8,
            label_id_bytes: 8,
            name_bytes: 10,
            description_bytes: 30,
            examples_per_label: 2,
            labels_per_round: 3,
            active_labels: 100,
        };
        let mut cases: Vec<(LabelEvent, &str)> = Vec::new();
        cases.push((round(vec![spec("a-very-long-id")]), keys::LABEL_ID_BYTES));
        let mut named = spec("a");
        named.name = Some("n".repeat(11));
        cases.push((round(vec![named]), keys::NAME_BYTES));
        let mut described = spec("a");
        described.description = Some("d".repeat(31));
        cases.push((round(vec![described]), keys::DESCRIPTION_BYTES));
        let mut many = spec("a");
        many.examples = vec!["x".into(); 3];
        cases.push((round(vec![many]), keys::EXAMPLES_PER_LABEL));
        let mut long_example = spec("a");
        long_example.examples = vec!["e".repeat(21)];
        cases.push((round(vec![long_example]), keys::TEXT_BYTES));
        cases.push((
            round(vec![spec("a"), spec("b"), spec("c"), spec("d")]),
            keys::LABELS_PER_ROUND,
        ));
        cases.push((
            LabelEvent::Round {
                version: EVENT_VERSION,
                round: "round-id-too-long".into(),
                labels: vec![spec("a")],
            },
            keys::LABEL_ID_BYTES,
        ));
        for (event, key) in cases {
            let message = refused(&event, &bounds);
            assert!(message.contains(key), "{key}: {message}");
        }
    }

    #[test]
    fn the_other_events_keep_their_bounds_too() {
        let bounds = Bounds {
            text_bytes: 20,
            text_id_bytes: 8,
            label_id_bytes: 8,
            examples_per_label: 1,
            ..Bounds::default()
        };
        let add = |label: &str, examples: Vec<String>| LabelEvent::AddExamples {
            version: EVENT_VERSION,
            label: label.into(),
            examples,
        };
        let correct = |text_id: &str, text: &str| LabelEvent::Correct {
            version: EVENT_VERSION,
            text_id: text_id.into(),
            label: Some("a".into()),
            none_of_these: false,
            text: text.into(),
            audit: false,
            reviewer: None,
            proposal: None,
        };
        let cases = [
            (add("too-long-label", vec![]), keys::LABEL_ID_BYTES),
            (
                add("a", vec!["x".into(), "y".into()]),
                keys::EXAMPLES_PER_LABEL,
            ),
            (add("a", vec!["z".repeat(21)]), keys::TEXT_BYTES),
            (
                LabelEvent::RetireLabel {
                    version: EVENT_VERSION,
                    label: "too-long-label".into(),
                },
                keys::LABEL_ID_BYTES,
            ),
            (correct("too-long-text-id", "fine"), keys::TEXT_ID_BYTES),
            (correct("t1", &"w".repeat(21)), keys::TEXT_BYTES),
        ];
        for (event, key) in cases {
            let message = refused(&event, &bounds);
            assert!(message.contains(key), "{key}: {message}");
        }
        assert_eq!(label_event(&add("a", vec!["ok".into()]), &bounds), Ok(()));
        assert_eq!(label_event(&correct("t1", "fine"), &bounds), Ok(()));
    }

    /// A 1 MB label id is quoted as an excerpt, not copied.
    #[test]
    fn a_huge_id_is_quoted_short() {
        let message = refused(&round(vec![spec(&"i".repeat(1 << 20))]), &Bounds::default());
        assert!(message.contains("is 1048576 bytes"), "{message}");
    }
}
