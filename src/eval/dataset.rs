//! DFSTC round splits on disk: `<dir>/<k>shot/r<n>/{train,test}.tsv`, one `label<TAB>text` a
//! line. A round without `test.tsv` uses `dev.tsv` as its held-out texts (the public WOS split
//! lacks round 2's test file; its dev file is the only held-out text of that round).

use std::fs;
use std::path::{Path, PathBuf};

use rand::seq::SliceRandom;
use rand::SeedableRng;
use thiserror::Error;

use crate::engine::NewLabel;

#[derive(Debug, Error)]
pub enum DatasetError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}: expected `label<TAB>text`")]
    BadLine { path: PathBuf, line: usize },
    #[error("{0}: no round folders r1, r2, … found")]
    NoRounds(PathBuf),
    #[error("{path}: no {what} in it (one `label<TAB>text` a line)")]
    Empty { path: PathBuf, what: &'static str },
    #[error("{path}: round {round} has no held-out texts (test.tsv or dev.tsv; `--held-out dev` needs dev.tsv)")]
    NoHeldOut { path: PathBuf, round: usize },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub label: String,
    pub text: String,
}

#[derive(Debug, Clone)]
pub struct RoundData {
    /// 1-based round number.
    pub number: usize,
    pub train: Vec<Sample>,
    pub test: Vec<Sample>,
    /// Which file the held-out texts came from (`test.tsv` or `dev.tsv`).
    pub held_out_file: &'static str,
}

/// Whether label ids are meaningful names the LLM can read and describe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LabelNames {
    /// Names unless every label looks like `label 7` (the Reuters split).
    Auto,
    Yes,
    No,
}

fn read_tsv(path: &Path) -> Result<Vec<Sample>, DatasetError> {
    let content = fs::read_to_string(path).map_err(|source| DatasetError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    // A spreadsheet's "UTF-8" export starts with a byte-order mark: not part of the label.
    let content = content.strip_prefix('\u{feff}').unwrap_or(&content);
    let mut samples = Vec::new();
    for (i, line) in content.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let (label, text) = line.split_once('\t').ok_or_else(|| DatasetError::BadLine {
            path: path.to_path_buf(),
            line: i + 1,
        })?;
        if label.trim().is_empty() {
            return Err(DatasetError::BadLine {
                path: path.to_path_buf(),
                line: i + 1,
            });
        }
        samples.push(Sample {
            label: label.trim().to_string(),
            text: text.to_string(),
        });
    }
    Ok(samples)
}

/// A file that holds no sample is an error, never a round of zeros.
fn non_empty(
    samples: Vec<Sample>,
    path: &Path,
    what: &'static str,
) -> Result<Vec<Sample>, DatasetError> {
    if samples.is_empty() {
        return Err(DatasetError::Empty {
            path: path.to_path_buf(),
            what,
        });
    }
    Ok(samples)
}

/// Which held-out texts to classify.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HeldOut {
    /// `test.tsv` (reporting), or `dev.tsv` where a round has no test file.
    #[default]
    Test,
    /// `dev.tsv` only (tuning): a round without one is an error.
    Dev,
}

/// Load rounds 1..=`max_rounds` (all present when None) of the `shots`-shot split.
pub fn load(
    dataset: &Path,
    shots: u32,
    max_rounds: Option<usize>,
    held_out: HeldOut,
) -> Result<Vec<RoundData>, DatasetError> {
    let base = dataset.join(format!("{shots}shot"));
    let mut rounds = Vec::new();
    for number in 1.. {
        if max_rounds.is_some_and(|max| number > max) {
            break;
        }
        let dir = base.join(format!("r{number}"));
        if !dir.is_dir() {
            break;
        }
        let train = non_empty(
            read_tsv(&dir.join("train.tsv"))?,
            &dir.join("train.tsv"),
            "labelled examples",
        )?;
        let (test_path, held_out_file) =
            if held_out == HeldOut::Test && dir.join("test.tsv").is_file() {
                (dir.join("test.tsv"), "test.tsv")
            } else if dir.join("dev.tsv").is_file() {
                (dir.join("dev.tsv"), "dev.tsv")
            } else {
                return Err(DatasetError::NoHeldOut {
                    path: dir,
                    round: number,
                });
            };
        rounds.push(RoundData {
            number,
            train,
            test: non_empty(read_tsv(&test_path)?, &test_path, "texts to classify")?,
            held_out_file,
        });
    }
    if rounds.is_empty() {
        return Err(DatasetError::NoRounds(base));
    }
    Ok(rounds)
}

/// Keep at most `limit` held-out texts per round, chosen by a seeded shuffle (the same seed
/// gives the same texts), kept in file order.
pub fn sample(rounds: &mut [RoundData], limit: usize, seed: u64) {
    for round in rounds {
        if round.test.len() <= limit {
            continue;
        }
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ (round.number as u64));
        let mut picked: Vec<usize> = (0..round.test.len()).collect();
        picked.shuffle(&mut rng);
        picked.truncate(limit);
        picked.sort_unstable();
        round.test = picked.into_iter().map(|i| round.test[i].clone()).collect();
    }
}

/// Stream each round's held-out texts in a seeded shuffle instead of file order. The paper's
/// files are sorted by label (IFS-Rel, Reuters), so in file order consecutive texts share their
/// class, which favours learning every decision; a live stream interleaves its classes.
pub fn shuffle(rounds: &mut [RoundData], seed: u64) {
    for round in rounds {
        // A different stream of the generator than `sample`'s, so `--limit` with `--order
        // shuffled` does not pick and order by the same draw.
        let mut rng =
            rand::rngs::StdRng::seed_from_u64(seed.rotate_left(32) ^ (round.number as u64));
        round.test.shuffle(&mut rng);
    }
}

fn looks_unnamed(label: &str) -> bool {
    label
        .strip_prefix("label ")
        .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
}

/// Decide once for the whole split whether labels carry names.
pub fn labels_have_names(rounds: &[RoundData], names: LabelNames) -> bool {
    match names {
        LabelNames::Yes => true,
        LabelNames::No => false,
        LabelNames::Auto => !rounds
            .iter()
            .flat_map(|r| r.train.iter())
            .all(|s| looks_unnamed(&s.label)),
    }
}

/// Names and descriptions by label id, from a taxonomy file (`gorag eval --labels`, the format
/// of `gorag labels import`): they replace what the split's ids would give.
pub type Taxonomy = std::collections::HashMap<String, (Option<String>, Option<String>)>;

/// Give `labels` the taxonomy's name and description, where it has them.
pub fn name_and_describe(labels: &mut [NewLabel], taxonomy: &Taxonomy) {
    for label in labels {
        if let Some((name, description)) = taxonomy.get(&label.id) {
            if name.is_some() {
                label.name.clone_from(name);
            }
            if description.is_some() {
                label.description.clone_from(description);
            }
        }
    }
}

/// The round's labels, in order of first appearance, each with its examples.
pub fn round_labels(round: &RoundData, named: bool) -> Vec<NewLabel> {
    let mut labels: Vec<NewLabel> = Vec::new();
    for sample in &round.train {
        let position = match labels.iter().position(|l| l.id == sample.label) {
            Some(p) => p,
            None => {
                labels.push(NewLabel {
                    id: sample.label.clone(),
                    name: named.then(|| sample.label.replace('_', " ")),
                    description: None,
                    examples: Vec::new(),
                });
                labels.len() - 1
            }
        };
        labels[position].examples.push(sample.text.clone());
    }
    labels
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, rel: &str, body: &str) {
        let path = dir.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, body).unwrap();
    }

    #[test]
    fn a_taxonomy_names_and_describes_the_labels_it_has() {
        let mut labels = vec![
            NewLabel {
                id: "astro".into(),
                name: Some("astro".into()),
                description: None,
                examples: vec!["stars".into()],
            },
            NewLabel {
                id: "food".into(),
                name: Some("food".into()),
                description: Some("kept".into()),
                examples: Vec::new(),
            },
        ];
        let taxonomy: Taxonomy = [
            (
                "astro".to_string(),
                (
                    Some("Space".to_string()),
                    Some("Stars and planets".to_string()),
                ),
            ),
            ("food".to_string(), (None, None)),
        ]
        .into_iter()
        .collect();
        name_and_describe(&mut labels, &taxonomy);
        assert_eq!(labels[0].name.as_deref(), Some("Space"));
        assert_eq!(labels[0].description.as_deref(), Some("Stars and planets"));
        assert_eq!(labels[0].examples, vec!["stars".to_string()]);
        assert_eq!(
            labels[1].name.as_deref(),
            Some("food"),
            "nothing given: kept"
        );
        assert_eq!(labels[1].description.as_deref(), Some("kept"));
    }

    #[test]
    fn loads_rounds_and_falls_back_to_dev() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "1shot/r1/train.tsv", "a_b\tfirst\nc\tsecond\n");
        write(dir.path(), "1shot/r1/test.tsv", "a_b\tx\n\nc\ty\n");
        write(dir.path(), "1shot/r2/train.tsv", "d\tthird\n");
        write(dir.path(), "1shot/r2/dev.tsv", "d\tz\n");
        let rounds = load(dir.path(), 1, None, HeldOut::Test).unwrap();
        assert_eq!(rounds.len(), 2);
        assert_eq!(rounds[0].test.len(), 2);
        assert_eq!(rounds[1].held_out_file, "dev.tsv");
        let labels = round_labels(&rounds[0], true);
        assert_eq!(labels[0].name.as_deref(), Some("a b"));
        assert!(labels_have_names(&rounds, LabelNames::Auto));
        assert_eq!(
            load(dir.path(), 1, Some(1), HeldOut::Test).unwrap().len(),
            1
        );
    }

    #[test]
    fn bad_lines_and_missing_splits_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "1shot/r1/train.tsv", "ok\ttext\nno tab here\n");
        write(dir.path(), "1shot/r1/test.tsv", "ok\tx\n");
        let err = load(dir.path(), 1, None, HeldOut::Test).unwrap_err();
        assert!(err
            .to_string()
            .ends_with("train.tsv:2: expected `label<TAB>text`"));
        assert!(matches!(
            load(dir.path(), 5, None, HeldOut::Test),
            Err(DatasetError::NoRounds(_))
        ));
    }

    /// One round of 100 held-out texts "0" … "99".
    fn hundred_texts() -> Vec<RoundData> {
        let test = (0..100)
            .map(|i| Sample {
                label: "l".into(),
                text: i.to_string(),
            })
            .collect();
        vec![RoundData {
            number: 1,
            train: vec![],
            test,
            held_out_file: "test.tsv",
        }]
    }

    fn positions(round: &RoundData) -> Vec<usize> {
        round.test.iter().map(|s| s.text.parse().unwrap()).collect()
    }

    #[test]
    fn sampling_is_deterministic_and_ordered() {
        let make = hundred_texts;
        let (mut a, mut b) = (make(), make());
        sample(&mut a, 10, 7);
        sample(&mut b, 10, 7);
        assert_eq!(a[0].test, b[0].test);
        assert_eq!(a[0].test.len(), 10);
        let order = positions(&a[0]);
        assert!(order.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn shuffling_is_a_seeded_permutation() {
        let (mut a, mut b, mut c) = (hundred_texts(), hundred_texts(), hundred_texts());
        shuffle(&mut a, 7);
        shuffle(&mut b, 7);
        shuffle(&mut c, 8);
        assert_eq!(a[0].test, b[0].test);
        assert_ne!(positions(&a[0]), positions(&c[0]));
        assert_ne!(positions(&a[0]), (0..100).collect::<Vec<_>>());
        let mut sorted = positions(&a[0]);
        sorted.sort_unstable();
        assert_eq!(sorted, (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn reuters_style_labels_are_unnamed() {
        let round = RoundData {
            number: 1,
            train: vec![Sample {
                label: "label 3".into(),
                text: "t".into(),
            }],
            test: vec![],
            held_out_file: "test.tsv",
        };
        assert!(!labels_have_names(
            std::slice::from_ref(&round),
            LabelNames::Auto
        ));
        assert_eq!(round_labels(&round, false)[0].name, None);
    }
}
