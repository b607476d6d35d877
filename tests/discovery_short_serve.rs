//! A theme of short queries that no class covers, end to end against the real broker and the
//! service's sentence encoder (potion-base-8M, which scripts/test.sh fetches): the queries
//! share few words, so only their meaning groups them. The theme is proposed once, the proposal
//! grows under its id as more of its queries arrive — which, while it is open, are held for
//! review with the proposal named rather than decided into a known label — the review desk
//! offers it for such a text, and a reviewer's accept there becomes a round the service
//! applies, with the text placed in it among its examples.

#[allow(dead_code)] // this binary uses some of the helpers only
mod support;

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use serde_json::{json, Value};
use support::desk::reqwest::blocking_client;
use support::desk::{accept_proposal, skip_to_proposal, DeskProcess, ANN, BOB};
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

    // Eight more: the same proposal grows under its id, and no second one is opened. The
    // service holds them for the proposal once its pass is collected (on the next tick).
    std::thread::sleep(Duration::from_secs(3));
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

    // While it was open, most of them were held for it: needs review, the proposal named.
    let later_ids: Vec<String> = (10..18).map(|i| format!("weather-{i}")).collect();
    let predictions = read_until(&topics.predictions, Duration::from_secs(60), |records| {
        records
            .iter()
            .filter(|r| {
                later_ids
                    .iter()
                    .any(|id| r.json()["text_id"] == id.as_str())
            })
            .count()
            >= later_ids.len()
    });
    let later: Vec<Value> = predictions
        .iter()
        .map(Record::json)
        .filter(|p| later_ids.iter().any(|id| p["text_id"] == id.as_str()))
        .collect();
    let held: Vec<&Value> = later
        .iter()
        .filter(|p| p["proposal"]["id"] == id.as_str())
        .collect();
    eprintln!(
        "the eight later questions: {:?}",
        later
            .iter()
            .map(|p| (
                &p["text_id"],
                &p["status"],
                &p["label"],
                &p["proposal"]["id"]
            ))
            .collect::<Vec<_>>()
    );
    assert!(
        held.len() >= 2 && held.iter().all(|p| p["status"] != "decided"),
        "held for {id}: {held:?}\n{}",
        service.log_text()
    );

    // On the desk, a reviewer places one of them in the proposal…
    let desk = DeskProcess::start(dir.path(), &topics, &["review.audit_share=0"]);
    let client = blocking_client();
    let placed =
        place_a_text_in(&client, &desk.url, &id, Duration::from_secs(60)).unwrap_or_else(|| {
            panic!(
                "the desk offered no text with {id}:\n{}",
                std::fs::read_to_string(&desk.log).unwrap_or_default()
            )
        });
    // …published after the undo window, and read back by the desk before the accept.
    read_until(&topics.labels, Duration::from_secs(30), |records| {
        records.iter().any(|r| r.json()["proposal"] == id.as_str())
    });
    std::thread::sleep(Duration::from_secs(2));

    // Another accepts it.
    assert!(
        skip_to_proposal(&client, &desk.url, ANN, &id, Duration::from_secs(60)),
        "the desk never showed {id}:\n{}",
        std::fs::read_to_string(&desk.log).unwrap_or_default()
    );
    let accepted = accept_proposal(&client, &desk.url, ANN, (&id, "weather", "weather"));
    assert_eq!(accepted.status().as_u16(), 202, "{}", accepted.body);
    // Published after the desk's undo window, then applied by the service as a round (the
    // placed text's correction was the second label event), with the placed text first among
    // its examples.
    service.wait_for_log_count("label event applied", 3);
    let labels_topic = read_until(&topics.labels, Duration::from_secs(30), |records| {
        records
            .iter()
            .any(|r| r.json()["round"] == format!("accept-{id}"))
    });
    let round = labels_topic
        .iter()
        .map(Record::json)
        .find(|r| r["round"] == format!("accept-{id}"))
        .expect("the accepting round");
    assert_eq!(
        round["labels"][0]["examples"][0],
        placed.as_str(),
        "{round}"
    );

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

/// As BOB, skip what the desk serves until a text held for proposal `id`, and place it there;
/// the placed text, or None when `limit` passes first.
fn place_a_text_in(
    client: &support::desk::reqwest::Blocking,
    url: &str,
    id: &str,
    limit: Duration,
) -> Option<String> {
    let started = std::time::Instant::now();
    while started.elapsed() < limit {
        let next = client.get(format!("{url}/api/next")).bearer(BOB).send();
        let item = next
            .ok()
            .and_then(|n| serde_json::from_str::<Value>(&n.body).ok())
            .map(|n| n["item"].clone())
            .unwrap_or_default();
        let reference = match (item["text_id"].as_str(), item["proposal"].as_str()) {
            (Some(text_id), _) if item["proposal"]["id"] == id => {
                let answer = json!({"item": {"text": text_id}, "answer": {"proposal": id}});
                let taken = client
                    .post(format!("{url}/api/answer"))
                    .bearer(BOB)
                    .json(&answer)
                    .send()
                    .expect("answer");
                assert_eq!(taken.status().as_u16(), 202, "{}", taken.body);
                return item["text"].as_str().map(str::to_string);
            }
            (Some(text_id), _) => json!({"text": text_id}),
            (None, Some(proposal)) => json!({"proposal": proposal}),
            (None, None) => {
                std::thread::sleep(Duration::from_millis(200));
                continue;
            }
        };
        let _ = client
            .post(format!("{url}/api/skip"))
            .bearer(BOB)
            .json(&json!({ "item": reference }))
            .send();
    }
    None
}
