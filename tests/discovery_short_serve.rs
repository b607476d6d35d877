//! A theme of short queries that no class covers, end to end against the real broker and the
//! service's sentence encoder (potion-base-8M, which scripts/test.sh fetches): the queries
//! share few words, so only their meaning groups them. The theme is proposed once, the proposal
//! grows under its id as more of its queries arrive, the review desk shows it, and a reviewer's
//! accept there becomes a round the service applies.

#[allow(dead_code)] // this binary uses some of the helpers only
mod support;

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use serde_json::{json, Value};
use support::desk::reqwest::blocking_client;
use support::desk::{accept_proposal, skip_to_proposal, DeskProcess, ANN};
use support::kafka::{publish_json, read_until, Record, Service, Topics};

/// Questions about the weather, in few and mostly different words.
const WEATHER: [&str; 20] = [
    "will it rain tomorrow",
    "how hot is it outside",
    "is it snowing in denver",
    "weather forecast for the weekend",
    "do i need an umbrella today",
    "what is the temperature now",
    "any storms coming tonight",
    "how cold will it get",
    "is it sunny in paris",
    "chance of showers this afternoon",
    "will there be frost tonight",
    "how windy is it today",
    "is a heatwave coming",
    "forecast for monday morning",
    "will it be cloudy later",
    "how humid is it in miami",
    "should i wear a coat today",
    "is it going to hail",
    "weather in london this week",
    "will the rain stop soon",
];

fn text(id: &str, text: &str) -> String {
    json!({"id": id, "text": text}).to_string()
}

fn weather(range: std::ops::Range<usize>) -> Vec<String> {
    range
        .map(|i| text(&format!("weather-{i}"), WEATHER[i]))
        .collect()
}

/// The proposal records whose members are weather questions.
fn weather_proposals(records: &[Record]) -> Vec<Value> {
    records
        .iter()
        .map(Record::json)
        .filter(|p| {
            p["members"].as_array().is_some_and(|members| {
                members
                    .iter()
                    .any(|m| m.as_str().is_some_and(|m| m.starts_with("weather-")))
            })
        })
        .collect()
}

#[test]
fn a_theme_of_short_queries_is_proposed_once_grows_and_is_accepted_on_the_desk() {
    let rt = support::runtime();
    let topics = Topics::new("discovery-short");
    let dir = tempfile::tempdir().unwrap();
    let mut sets = topics.sets();
    sets.extend([
        format!("state.dir={}", dir.path().join("state").display()),
        "llm.url=none".to_string(),
        "discovery.pass_every=5".to_string(),
        "discovery.min_size=5".to_string(),
    ]);
    let mut service = Service::start(dir.path(), &sets);
    service.wait_ready();
    rt.block_on(publish_json(
        &topics.labels,
        &support::example("round-1.jsonl"),
    ));
    service.wait_for_log_count("label event applied", 1);

    // The known classes' texts, then the first ten weather questions: proposed.
    let mut stream = support::example("texts-1.jsonl");
    stream.extend(weather(0..10));
    rt.block_on(publish_json(&topics.texts, &stream));
    let records = read_until(&topics.proposals, Duration::from_secs(90), |r| {
        !weather_proposals(r).is_empty()
    });
    let first = weather_proposals(&records);
    assert!(
        !first.is_empty(),
        "no proposal of the weather questions within 90 s:\n{}",
        service.log_text()
    );
    let id = first[0]["proposal"].as_str().unwrap().to_string();
    let first_size = first[0]["size"].as_u64().unwrap();
    assert!(first_size >= 5, "{}", first[0]);
    let members: Vec<&str> = first[0]["members"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        members.iter().all(|m| m.starts_with("weather-")),
        "the known classes' texts are not members: {}",
        first[0]
    );

    // Eight more: the same proposal grows under its id, and no second one is opened.
    rt.block_on(publish_json(&topics.texts, &weather(10..18)));
    let records = read_until(&topics.proposals, Duration::from_secs(90), |r| {
        weather_proposals(r)
            .iter()
            .any(|p| p["proposal"] == id.as_str() && p["size"].as_u64() > Some(first_size))
    });
    let all = weather_proposals(&records);
    let grown = all
        .iter()
        .filter(|p| p["proposal"] == id.as_str())
        .map(|p| (p["revision"].as_u64().unwrap(), p["size"].as_u64().unwrap()))
        .max()
        .unwrap_or_else(|| panic!("{all:?}"));
    assert!(
        grown.0 >= 2 && grown.1 > first_size,
        "revision and size of {id}: {grown:?}, first {first_size}:\n{}",
        service.log_text()
    );
    let ids: BTreeSet<&str> = all.iter().filter_map(|p| p["proposal"].as_str()).collect();
    assert_eq!(ids.len(), 1, "one theme, one proposal: {all:?}");

    // The desk shows it; a reviewer accepts it there.
    let desk = DeskProcess::start(dir.path(), &topics, &["review.audit_share=0"]);
    let client = blocking_client();
    assert!(
        skip_to_proposal(&client, &desk.url, ANN, &id, Duration::from_secs(60)),
        "the desk never showed {id}:\n{}",
        std::fs::read_to_string(&desk.log).unwrap_or_default()
    );
    let accepted = accept_proposal(&client, &desk.url, ANN, (&id, "weather", "weather"));
    assert_eq!(accepted.status().as_u16(), 202, "{}", accepted.body);
    // Published after the desk's undo window, then applied by the service as a round.
    service.wait_for_log_count("label event applied", 2);

    let later = weather(18..20);
    rt.block_on(publish_json(&topics.texts, &later));
    let predictions = read_until(&topics.predictions, Duration::from_secs(60), |records| {
        records
            .iter()
            .filter(|r| r.json()["text_id"] == "weather-18" || r.json()["text_id"] == "weather-19")
            .count()
            == later.len()
    });
    let labels: HashMap<String, Value> = predictions
        .iter()
        .map(Record::json)
        .filter(|p| p["text_id"] == "weather-18" || p["text_id"] == "weather-19")
        .map(|p| {
            (
                p["text_id"].as_str().unwrap().to_string(),
                p["label"].clone(),
            )
        })
        .collect();
    assert!(
        labels.values().all(|label| label == "weather"),
        "{labels:?}"
    );
    service.stop();
}
