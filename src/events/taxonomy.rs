//! A label taxonomy kept as a file (CSV or JSONL) turned into round events, for
//! `gorag labels import`.
//!
//! One row per example (or per label, for a label without examples). Columns / fields:
//! `label` (required: the label id), `name`, `description`, `example` (`text` is accepted for
//! it; JSONL may also give `examples`, a list) and `round`. Rows of one label are merged in file
//! order; rows without a `round` go to the default round. Rounds and their labels keep the order
//! in which the file first names them. Unknown columns are refused, like unknown event fields:
//! a misspelt `exmple` column would otherwise drop every example silently.
//!
//! The result is checked the way the service will check it — each row against the bounds of
//! docs/guide/bounds.md (with its line), each event through the labels topic's decoder and the
//! same bounds, the rounds applied in order to an empty engine — and every problem is reported
//! at once, with its line.

use std::collections::BTreeMap;

use serde::Deserialize;
use thiserror::Error;

use super::{decode, LabelEvent, LabelSpec, EVENT_VERSION};
use crate::bounds::{excerpt, keys, over_bytes, Bounds};
use crate::engine::{Engine, EngineConfig, NewLabel};
use crate::input::{self, RowError};

/// Every problem found in a taxonomy file, one per line.
#[derive(Debug, Clone, PartialEq, Error)]
#[error("{}", .0.join("\n"))]
pub struct TaxonomyErrors(pub Vec<String>);

pub use crate::input::Format;

/// One row of the file, whatever its format.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct Row {
    /// Absent (an empty cell) is an empty id, reported as such.
    #[serde(default)]
    label: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default, alias = "text")]
    example: Option<String>,
    /// JSONL only: several examples at once.
    #[serde(default)]
    examples: Vec<String>,
    #[serde(default)]
    round: Option<String>,
}

/// The round events a taxonomy file announces, checked against `bounds`; `default_round`
/// names the round of rows that give none.
pub fn rounds(
    text: &str,
    format: Format,
    default_round: &str,
    bounds: &Bounds,
) -> Result<Vec<LabelEvent>, TaxonomyErrors> {
    let rows = match format {
        Format::Csv => csv_rows(text),
        Format::Jsonl => jsonl_rows(text),
    }?;
    let events = group(rows, default_round, bounds)?;
    check(&events, bounds)?;
    Ok(events)
}

/// The columns a CSV taxonomy may have.
const COLUMNS: [&str; 6] = ["label", "name", "description", "example", "text", "round"];

/// (line, row) of a CSV file with a header line.
fn csv_rows(text: &str) -> Result<Vec<(usize, Row)>, TaxonomyErrors> {
    let read = input::csv(text).map_err(|e| TaxonomyErrors(vec![e.to_string()]))?;
    let mut errors: Vec<String> = read
        .columns
        .iter()
        .filter(|c| !COLUMNS.contains(&c.as_str()))
        .map(|c| {
            format!(
                "line 1: unknown column {}; expected {}",
                excerpt(c),
                COLUMNS.join(", ")
            )
        })
        .collect();
    if !read.columns.iter().any(|c| c == "label") {
        errors.push("line 1: no `label` column".to_string());
    }
    if !errors.is_empty() {
        return Err(TaxonomyErrors(errors));
    }
    parsed(read.rows)
}

fn jsonl_rows(text: &str) -> Result<Vec<(usize, Row)>, TaxonomyErrors> {
    parsed(input::json_lines(text.as_bytes()).collect())
}

/// Every row as a [`Row`], or every problem with its line.
fn parsed(rows: Vec<Result<input::Row, RowError>>) -> Result<Vec<(usize, Row)>, TaxonomyErrors> {
    let mut parsed = Vec::new();
    let mut errors = Vec::new();
    for row in rows {
        match row.and_then(|row| Ok((row.line, row.parse::<Row>()?))) {
            Ok((line, row)) => parsed.push((line, without_empty(row))),
            Err(error) => errors.push(error.to_string()),
        }
    }
    if parsed.is_empty() && errors.is_empty() {
        errors.push("no rows: a taxonomy names at least one label".to_string());
    }
    if errors.is_empty() {
        Ok(parsed)
    } else {
        Err(TaxonomyErrors(errors))
    }
}

fn without_empty(row: Row) -> Row {
    let some = |value: Option<String>| value.filter(|v| !v.trim().is_empty());
    Row {
        name: some(row.name),
        description: some(row.description),
        example: some(row.example),
        round: some(row.round),
        examples: row
            .examples
            .into_iter()
            .filter(|e| !e.trim().is_empty())
            .collect(),
        label: row.label.trim().to_string(),
    }
}

/// Merge rows into rounds of labels, in the order the file names them.
fn group(
    rows: Vec<(usize, Row)>,
    default_round: &str,
    bounds: &Bounds,
) -> Result<Vec<LabelEvent>, TaxonomyErrors> {
    let mut errors = Vec::new();
    let mut rounds: Vec<(String, Vec<LabelSpec>)> = Vec::new();
    // label id → (round position, label position, line first seen)
    let mut seen: BTreeMap<String, (usize, usize, usize)> = BTreeMap::new();
    for (line, row) in rows {
        if row.label.is_empty() {
            errors.push(format!("line {line}: empty label id"));
            continue;
        }
        if let Some(over) = row_over_bounds(&row, bounds) {
            errors.push(format!("line {line}: {over}"));
            continue;
        }
        let round = row
            .round
            .clone()
            .unwrap_or_else(|| default_round.to_string());
        let r = match rounds.iter().position(|(id, _)| *id == round) {
            Some(r) => r,
            None => {
                rounds.push((round.clone(), Vec::new()));
                rounds.len() - 1
            }
        };
        let (at_round, at_label, first_line) = match seen.get(&row.label) {
            Some(&found) => found,
            None => {
                rounds[r].1.push(LabelSpec {
                    id: row.label.clone(),
                    name: None,
                    description: None,
                    examples: Vec::new(),
                });
                let found = (r, rounds[r].1.len() - 1, line);
                seen.insert(row.label.clone(), found);
                found
            }
        };
        if at_round != r {
            errors.push(format!(
                "line {line}: label {} is in round {} here but in round {} on line \
                 {first_line}; a label belongs to one round",
                excerpt(&row.label),
                excerpt(&round),
                excerpt(&rounds[at_round].0)
            ));
            continue;
        }
        if at_label == bounds.labels_per_round && first_line == line {
            errors.push(format!(
                "line {line}: label {} is round {}'s label {}; the limit ({}) is {}: give \
                 the labels past it another round",
                excerpt(&row.label),
                excerpt(&round),
                at_label + 1,
                keys::LABELS_PER_ROUND,
                bounds.labels_per_round
            ));
        }
        let spec = &mut rounds[r].1[at_label];
        let had = spec.examples.len();
        merge_row(spec, row, (line, first_line), &mut errors);
        if had <= bounds.examples_per_label && spec.examples.len() > bounds.examples_per_label {
            errors.push(format!(
                "line {line}: label {} has {} examples up to here; the limit ({}) is {}: \
                 send the rest in add_examples events",
                excerpt(&spec.id),
                spec.examples.len(),
                keys::EXAMPLES_PER_LABEL,
                bounds.examples_per_label
            ));
        }
    }
    if !errors.is_empty() {
        return Err(TaxonomyErrors(errors));
    }
    Ok(rounds
        .into_iter()
        .map(|(round, labels)| LabelEvent::Round {
            version: EVENT_VERSION,
            round,
            labels,
        })
        .collect())
}

/// The first bound one row passes, said as the service would say it.
fn row_over_bounds(row: &Row, bounds: &Bounds) -> Option<String> {
    let id = bounds.label_id_bytes;
    let examples = row.example.iter().chain(&row.examples);
    over_bytes("the label id", &row.label, id, keys::LABEL_ID_BYTES)
        .or_else(|| {
            let round = row.round.as_deref()?;
            over_bytes("the round id", round, id, keys::LABEL_ID_BYTES)
        })
        .or_else(|| {
            let name = row.name.as_deref()?;
            over_bytes("the name", name, bounds.name_bytes, keys::NAME_BYTES)
        })
        .or_else(|| {
            let description = row.description.as_deref()?;
            let limit = bounds.description_bytes;
            over_bytes(
                "the description",
                description,
                limit,
                keys::DESCRIPTION_BYTES,
            )
        })
        .or_else(|| {
            examples
                .filter_map(|e| over_bytes("an example", e, bounds.text_bytes, keys::TEXT_BYTES))
                .next()
        })
}

/// Add a row's examples to its label, and its name and description unless the label's first
/// line gave different ones (an error, with both lines).
fn merge_row(
    spec: &mut LabelSpec,
    row: Row,
    (line, first_line): (usize, usize),
    errors: &mut Vec<String>,
) {
    for (field, value, kept) in [
        ("name", row.name, &mut spec.name),
        ("description", row.description, &mut spec.description),
    ] {
        match (value, kept.as_ref()) {
            (Some(new), Some(old)) if new != *old => errors.push(format!(
                "line {line}: label {} has {field} {} here but {} on line {first_line}",
                excerpt(&row.label),
                excerpt(&new),
                excerpt(old)
            )),
            (Some(new), None) => *kept = Some(new),
            _ => {}
        }
    }
    spec.examples.extend(row.example);
    spec.examples.extend(row.examples);
}

/// The service's own checks: the labels topic's decoder, the bounds, then the rounds applied in
/// order.
fn check(events: &[LabelEvent], bounds: &Bounds) -> Result<(), TaxonomyErrors> {
    let mut errors = Vec::new();
    let mut engine = Engine::new(EngineConfig::default());
    for event in events {
        let LabelEvent::Round { round, labels, .. } = event else {
            continue;
        };
        let round = excerpt(round);
        let active = engine.labels().active().count();
        let checked = serde_json::to_vec(event)
            .map_err(|e| e.to_string())
            .and_then(|bytes| decode::label_event(&bytes).map_err(|e| e.to_string()))
            .and_then(|event| {
                super::bounds::label_event(&event, bounds)
                    .and_then(|()| super::bounds::active_labels(active, labels.len(), bounds))
                    .map_err(|e| e.to_string())
            });
        let new: Vec<NewLabel> = labels.iter().map(NewLabel::from).collect();
        let applied =
            checked.and_then(|()| engine.apply_round(None, &new).map_err(|e| e.to_string()));
        if let Err(error) = applied {
            errors.push(format!("round {round}: {error}"));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(TaxonomyErrors(errors))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(event: &LabelEvent) -> (&str, &[LabelSpec]) {
        match event {
            LabelEvent::Round { round, labels, .. } => (round, labels),
            other => panic!("not a round: {other:?}"),
        }
    }

    #[test]
    fn csv_rows_of_one_label_merge_into_one_spec_in_file_order() {
        let text = "label,name,description,example\n\
                    billing,billing and payments,Charges and invoices,I was charged twice.\n\
                    shipping,shipping,,\"Parcel late, no tracking.\"\n\
                    billing,,,Wrong VAT on my invoice.\n";
        let events = rounds(text, Format::Csv, "r1", &Bounds::default()).unwrap();
        assert_eq!(events.len(), 1);
        let (round, specs) = labels(&events[0]);
        assert_eq!(round, "r1");
        assert_eq!(specs.len(), 2);
        assert_eq!(specs[0].id, "billing");
        assert_eq!(specs[0].name.as_deref(), Some("billing and payments"));
        assert_eq!(
            specs[0].description.as_deref(),
            Some("Charges and invoices")
        );
        assert_eq!(
            specs[0].examples,
            ["I was charged twice.", "Wrong VAT on my invoice."]
        );
        assert_eq!(
            specs[1].description, None,
            "an empty cell is no description"
        );
        assert_eq!(specs[1].examples, ["Parcel late, no tracking."]);
    }

    #[test]
    fn a_spreadsheet_byte_order_mark_and_quoted_line_breaks_are_read() {
        let text = "\u{feff}label,example\na,\"two\nlines\"\nb,x\n";
        let events = rounds(text, Format::Csv, "r1", &Bounds::default()).unwrap();
        let (_, specs) = labels(&events[0]);
        assert_eq!(specs[0].examples, ["two\nlines"]);
        assert_eq!(specs[1].id, "b");

        // Lines are the file's, counting the lines inside quoted cells.
        let errors = rounds(
            "label,name\na,\"x\ny\"\na,z\n",
            Format::Csv,
            "r1",
            &Bounds::default(),
        )
        .unwrap_err();
        assert!(errors.0[0].starts_with("line 4: "), "{errors:?}");
    }

    #[test]
    fn a_round_column_splits_rounds_in_the_order_first_named() {
        let text = "round,label,text\nr2,b,x\nr1,a,y\n,c,z\n";
        let events = rounds(text, Format::Csv, "base", &Bounds::default()).unwrap();
        let ids: Vec<(&str, Vec<&str>)> = events
            .iter()
            .map(|e| {
                let (round, specs) = labels(e);
                (round, specs.iter().map(|s| s.id.as_str()).collect())
            })
            .collect();
        assert_eq!(
            ids,
            [("r2", vec!["b"]), ("r1", vec!["a"]), ("base", vec!["c"])]
        );
    }

    #[test]
    fn jsonl_takes_one_example_or_a_list_and_a_label_without_examples() {
        let text = "{\"label\":\"a\",\"examples\":[\"x\",\"y\"]}\n\n\
                    {\"label\":\"a\",\"example\":\"z\"}\n\
                    {\"label\":\"b\",\"name\":\"zero shot\"}\n";
        let events = rounds(text, Format::Jsonl, "r1", &Bounds::default()).unwrap();
        let (_, specs) = labels(&events[0]);
        assert_eq!(specs[0].examples, ["x", "y", "z"]);
        assert!(specs[1].examples.is_empty());
    }

    #[test]
    fn every_problem_is_reported_at_once_with_its_line() {
        let errors = rounds(
            "label,exmple,owner\na,x,me\n",
            Format::Csv,
            "r1",
            &Bounds::default(),
        )
        .unwrap_err();
        assert_eq!(errors.0.len(), 2, "{errors:?}");
        assert!(errors.0[0].contains("unknown column \"exmple\""));

        let errors = rounds(
            "label,name,round\na,A,r1\na,B,r1\nb,,r1\nb,,r2\n,,r1\n",
            Format::Csv,
            "r1",
            &Bounds::default(),
        )
        .unwrap_err();
        let text = errors.to_string();
        assert!(
            text.contains("line 3: label \"a\" has name \"B\" here but \"A\" on line 2"),
            "{text}"
        );
        assert!(
            text.contains("line 5: label \"b\" is in round \"r2\""),
            "{text}"
        );
        assert!(text.contains("line 6: empty label id"), "{text}");

        let errors = rounds(
            "{\"label\":\"a\",\"colour\":1}\nnot json\n",
            Format::Jsonl,
            "r1",
            &Bounds::default(),
        )
        .unwrap_err();
        assert_eq!(errors.0.len(), 2);
        assert!(
            errors.0[0].starts_with("line 1: unknown field `colour`"),
            "{errors:?}"
        );
        assert!(errors.0[1].starts_with("line 2:"));
    }

    #[test]
    fn a_label_repeated_across_the_round_column_is_caught_by_the_engine_check() {
        // Same id in two rounds is refused by grouping; the engine check is the backstop for
        // what grouping cannot see, e.g. an empty round.
        let events = rounds("label\na\n", Format::Csv, "r1", &Bounds::default()).unwrap();
        assert_eq!(events.len(), 1);
        assert!(check(&[events[0].clone(), events[0].clone()], &Bounds::default()).is_err());
    }

    /// Each bound a row passes is an error naming its line and the bound's key.
    #[test]
    fn every_bound_a_row_passes_names_its_line_and_key() {
        let bounds = Bounds {
            text_bytes: 30,
            label_id_bytes: 8,
            name_bytes: 10,
            description_bytes: 20,
            examples_per_label: 2,
            labels_per_round: 2,
            active_labels: 3,
            ..Bounds::default()
        };
        let long = |n: usize| "z".repeat(n);
        let text = format!(
            "label,name,description,example,round\n\
             ok,,,fine,r1\n\
             {},,,x,r1\n\
             a,{},,x,r1\n\
             b,,{},x,r1\n\
             c,,,{},r1\n\
             d,,,x,{}\n\
             ok,,,two,r1\n\
             ok,,,three,r1\n\
             e,,,x,r1\n\
             f,,,x,r1\n",
            long(9),
            long(11),
            long(21),
            long(31),
            long(9)
        );
        let errors = rounds(&text, Format::Csv, "r1", &bounds).unwrap_err().0;
        let expected = [
            (3, keys::LABEL_ID_BYTES),
            (4, keys::NAME_BYTES),
            (5, keys::DESCRIPTION_BYTES),
            (6, keys::TEXT_BYTES),
            (7, keys::LABEL_ID_BYTES),
            (9, keys::EXAMPLES_PER_LABEL),
            (11, keys::LABELS_PER_ROUND),
        ];
        for (line, key) in expected {
            assert!(
                errors
                    .iter()
                    .any(|e| e.starts_with(&format!("line {line}: ")) && e.contains(key)),
                "line {line} ({key}) not reported: {errors:#?}"
            );
        }
        assert_eq!(errors.len(), expected.len(), "{errors:#?}");
        assert!(errors.iter().all(|e| e.len() < 300), "{errors:#?}");
    }

    #[test]
    fn rounds_past_the_active_labels_bound_are_refused() {
        let bounds = Bounds {
            active_labels: 2,
            ..Bounds::default()
        };
        let text = "label,round\na,r1\nb,r1\nc,r2\n";
        let errors = rounds(text, Format::Csv, "r1", &bounds).unwrap_err();
        assert_eq!(errors.0.len(), 1, "{errors}");
        assert!(
            errors.0[0].starts_with("round \"r2\": over_limit: the round would make 3"),
            "{errors}"
        );
        assert!(errors.0[0].contains(keys::ACTIVE_LABELS), "{errors}");
    }
}
