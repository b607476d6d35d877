//! Bringing a kept engine up to a taxonomy file (`gorag classify --labels FILE --state DIR`):
//! the file is the list of labels as the user keeps it, so a run applies only what is new in it
//! — new labels as a round, new examples of known labels — and says what it cannot apply.

use std::collections::HashSet;

use crate::engine::index::EXAMPLE_TEXT_CHARS;
use crate::engine::prompt::clip;
use crate::engine::Engine;
use crate::events::{LabelEvent, LabelSpec, EVENT_VERSION};

/// What of a taxonomy to apply to an engine, and what it leaves as it is.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaxonomySync {
    /// Rounds of the labels the engine lacks, then more examples of labels it has.
    pub events: Vec<LabelEvent>,
    /// What the file says that is not applied, one sentence each.
    pub notices: Vec<String>,
}

/// The events that bring `engine` up to `taxonomy` (the rounds of a taxonomy file).
///
/// A label the file renamed — a new id whose examples include at least half of the examples of
/// an active label the file no longer names — is retired under its old id before the new one is announced:
/// kept, the old label would split the vote with its copy.
pub fn sync_taxonomy(engine: &Engine, taxonomy: Vec<LabelEvent>) -> TaxonomySync {
    let mut sync = TaxonomySync::default();
    let mut more_examples = Vec::new();
    let mut named = HashSet::new();
    let file_ids: HashSet<String> = taxonomy
        .iter()
        .flat_map(|event| match event {
            LabelEvent::Round { labels, .. } => labels.iter().map(|l| l.id.clone()).collect(),
            _ => Vec::new(),
        })
        .collect();
    let mut retired = HashSet::new();
    for event in taxonomy {
        let LabelEvent::Round { round, labels, .. } = event else {
            sync.events.push(event);
            continue;
        };
        let mut new = Vec::new();
        for spec in labels {
            named.insert(spec.id.clone());
            match engine.labels().get(&spec.id) {
                None => {
                    if let Some(old) = renamed_from(engine, &spec, &file_ids, &retired) {
                        sync.notices.push(format!(
                            "label {old:?} is now {:?} in the file (its examples are there): \
                             {old:?} is retired and {:?} announced; what gorag learned under \
                             {old:?} stays with it",
                            spec.id, spec.id
                        ));
                        sync.events.push(LabelEvent::RetireLabel {
                            version: EVENT_VERSION,
                            label: old.clone(),
                        });
                        retired.insert(old);
                    }
                    new.push(spec)
                }
                Some(known) if !known.active => sync.notices.push(format!(
                    "label {:?} is retired in the state: its rows are not applied",
                    spec.id
                )),
                Some(known) => {
                    if spec.name.is_some() && spec.name != known.name
                        || spec.description.is_some() && spec.description != known.description
                    {
                        sync.notices.push(format!(
                            "label {:?}: a name or description differs from the state's; a \
                             label's name and description stay as first announced",
                            spec.id
                        ));
                    }
                    if let Some(event) = new_examples(engine, spec) {
                        more_examples.push(event);
                    }
                }
            }
        }
        if !new.is_empty() {
            sync.events.push(LabelEvent::Round {
                version: EVENT_VERSION,
                round,
                labels: new,
            });
        }
    }
    sync.events.extend(more_examples);
    let unnamed: Vec<&str> = engine
        .labels()
        .active()
        .map(|l| l.id.as_str())
        .filter(|id| !named.contains(*id) && !retired.contains(*id))
        .collect();
    if !unnamed.is_empty() {
        sync.notices.push(format!(
            "the state has active labels the file does not name ({}): they stay active; a \
             retire_label event retires one",
            unnamed.join(", ")
        ));
    }
    sync
}

/// The active label `spec` renames: one the file does not name, at least half of whose examples
/// `spec` has (not all: corrections became examples of it too).
fn renamed_from(
    engine: &Engine,
    spec: &LabelSpec,
    file_ids: &HashSet<String>,
    retired: &HashSet<String>,
) -> Option<String> {
    let examples: HashSet<&str> = spec
        .examples
        .iter()
        .map(|e| clip(e, EXAMPLE_TEXT_CHARS))
        .collect();
    engine
        .labels()
        .active()
        .filter(|l| !file_ids.contains(&l.id) && !retired.contains(&l.id))
        .find(|l| {
            let held = engine.retriever().example_texts(&l.id);
            let kept = held.iter().filter(|e| examples.contains(*e)).count();
            kept > 0 && 2 * kept >= held.len()
        })
        .map(|l| l.id.clone())
}

/// The examples of a known label the engine does not hold yet, as one event.
fn new_examples(engine: &Engine, spec: LabelSpec) -> Option<LabelEvent> {
    let held: HashSet<&str> = engine
        .retriever()
        .example_texts(&spec.id)
        .into_iter()
        .collect();
    let examples: Vec<String> = spec
        .examples
        .into_iter()
        .filter(|e| !held.contains(clip(e, EXAMPLE_TEXT_CHARS)))
        .collect();
    if examples.is_empty() {
        return None;
    }
    Some(LabelEvent::AddExamples {
        version: EVENT_VERSION,
        label: spec.id,
        examples,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{EngineConfig, NewLabel};

    fn spec(id: &str, examples: &[&str]) -> LabelSpec {
        LabelSpec {
            id: id.into(),
            name: None,
            description: None,
            examples: examples.iter().map(|e| e.to_string()).collect(),
        }
    }

    fn round(id: &str, labels: Vec<LabelSpec>) -> LabelEvent {
        LabelEvent::Round {
            version: EVENT_VERSION,
            round: id.into(),
            labels,
        }
    }

    fn engine_with(labels: &[LabelSpec]) -> Engine {
        let mut engine = Engine::new(EngineConfig::default());
        let labels: Vec<NewLabel> = labels.iter().map(NewLabel::from).collect();
        engine.apply_round(Some("r1"), &labels).expect("round");
        engine
    }

    #[test]
    fn an_engine_without_labels_gets_the_whole_taxonomy() {
        let engine = Engine::new(EngineConfig::default());
        let taxonomy = vec![round(
            "r1",
            vec![spec("billing", &["charged twice for the plan"])],
        )];
        let sync = sync_taxonomy(&engine, taxonomy.clone());
        assert_eq!(sync.events, taxonomy);
        assert!(sync.notices.is_empty());
    }

    /// An engine with two labels of one example each.
    fn billing_and_login() -> Engine {
        engine_with(&[
            spec("billing", &["charged twice for the plan"]),
            spec("login", &["cannot sign in after reset"]),
        ])
    }

    #[test]
    fn only_new_labels_and_new_examples_are_applied() {
        let engine = billing_and_login();
        let taxonomy = vec![round(
            "labels",
            vec![
                spec(
                    "billing",
                    &["charged twice for the plan", "refund never arrived"],
                ),
                spec("login", &["cannot sign in after reset"]),
                spec("shipping", &["parcel stuck in customs"]),
            ],
        )];
        let sync = sync_taxonomy(&engine, taxonomy);
        assert_eq!(
            sync.events,
            [
                round(
                    "labels",
                    vec![spec("shipping", &["parcel stuck in customs"])]
                ),
                LabelEvent::AddExamples {
                    version: EVENT_VERSION,
                    label: "billing".into(),
                    examples: vec!["refund never arrived".into()],
                },
            ]
        );
        assert!(sync.notices.is_empty(), "{:?}", sync.notices);
    }

    #[test]
    fn what_is_not_applied_is_said() {
        let engine = billing_and_login();
        let mut renamed = spec("billing", &[]);
        renamed.name = Some("payments".into());
        let sync = sync_taxonomy(&engine, vec![round("r2", vec![renamed])]);
        assert!(sync.events.is_empty());
        assert_eq!(sync.notices.len(), 2, "{:?}", sync.notices);
        assert!(sync.notices[0].contains("\"billing\": a name or description differs"));
        assert!(sync.notices[1].contains("(login)"));
    }

    #[test]
    fn a_renamed_label_is_retired_before_its_new_id_is_announced() {
        let engine = billing_and_login();
        let taxonomy = vec![round(
            "labels",
            vec![
                spec(
                    "payments",
                    &["charged twice for the plan", "refund missing"],
                ),
                spec("login", &["cannot sign in after reset"]),
            ],
        )];
        let sync = sync_taxonomy(&engine, taxonomy);
        assert_eq!(
            sync.events,
            [
                LabelEvent::RetireLabel {
                    version: EVENT_VERSION,
                    label: "billing".into()
                },
                round(
                    "labels",
                    vec![spec(
                        "payments",
                        &["charged twice for the plan", "refund missing"]
                    )]
                ),
            ]
        );
        assert_eq!(sync.notices.len(), 1, "{:?}", sync.notices);
        assert!(sync.notices[0].contains(r#"label "billing" is now "payments""#));
    }
}
