//! `gorag review` on the real broker, answered at full speed: a thousand answers by two
//! scripted reviewers reach the labels topic exactly once, across a desk killed and restarted
//! in the middle.

mod support;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::desk::{
    corrections, publish_waiting, reqwest::blocking_client, DeskProcess, ANN, BOB,
};
use support::kafka::{publish_json, read_until, Record, Topics};

fn corrections_count(records: &[Record]) -> usize {
    corrections(records).values().map(Vec::len).sum()
}

#[test]
fn a_thousand_answers_reach_the_labels_topic_exactly_once_across_a_desk_killed_midway() {
    const ITEMS: usize = 1000;
    let dir = tempfile::tempdir().expect("dir");
    let topics = Topics::new("desk-1000");
    let desk = DeskProcess::start(dir.path(), &topics, &["review.audit_share=0"]);
    let rt = support::runtime();
    rt.block_on(publish_json(
        &topics.labels,
        &support::example("round-1.jsonl"),
    ));
    let ids: Vec<String> = (0..ITEMS).map(|i| format!("q-{i:04}")).collect();
    rt.block_on(publish_waiting(&topics, &ids, |id| {
        format!("ticket {id} about a parcel")
    }));

    let url = Arc::new(Mutex::new(desk.url.clone()));
    let answered = Arc::new(AtomicUsize::new(0));
    let reviewers: Vec<_> = [ANN, BOB]
        .into_iter()
        .map(|token| {
            let (url, answered) = (url.clone(), answered.clone());
            std::thread::spawn(move || answer_everything(&url, token, &answered))
        })
        .collect();
    let started = Instant::now();
    while answered.load(Ordering::Relaxed) < ITEMS / 2 {
        assert!(started.elapsed() < Duration::from_secs(300), "too slow");
        std::thread::sleep(Duration::from_millis(5));
    }
    // Killed while answers are in flight; a new desk (another port) takes over.
    desk.kill();
    let restarted = DeskProcess::start(dir.path(), &topics, &["review.audit_share=0"]);
    *url.lock().expect("url") = restarted.url.clone();
    for reviewer in reviewers {
        reviewer.join().expect("reviewer thread");
    }
    let elapsed = started.elapsed();

    let records = read_until(&topics.labels, Duration::from_secs(60), |r| {
        corrections_count(r) >= ITEMS
    });
    // A little longer: a duplicate would come after the thousandth.
    let settled = read_until(&topics.labels, Duration::from_secs(3), |r| {
        r.len() > records.len()
    });
    let by_text = corrections(&settled);
    let repeated: Vec<&String> = by_text
        .iter()
        .filter(|(_, events)| events.len() > 1)
        .map(|(id, _)| id)
        .collect();
    assert!(repeated.is_empty(), "answered twice: {repeated:?}");
    let got: BTreeSet<&String> = by_text.keys().collect();
    let want: BTreeSet<&String> = ids.iter().collect();
    assert_eq!(got, want, "every item answered once");
    for events in by_text.values() {
        let reviewer = events[0]["reviewer"].as_str().unwrap_or_default();
        assert!(["ann", "bob"].contains(&reviewer), "{events:?}");
        assert_eq!(events[0]["version"], 3);
    }
    eprintln!(
        "{ITEMS} answers by 2 scripted reviewers in {:.1} s, the desk killed and restarted at \
         {} answers",
        elapsed.as_secs_f64(),
        ITEMS / 2
    );
}

/// Ask for items and answer each with the first candidate until the desk has none left;
/// a desk that is down (restarting) is waited for.
fn answer_everything(url: &Mutex<String>, token: &str, answered: &AtomicUsize) {
    let client = blocking_client();
    let started = Instant::now();
    let mut empty_in_a_row = 0;
    while empty_in_a_row < 3 {
        assert!(started.elapsed() < Duration::from_secs(600), "too slow");
        let base = url.lock().expect("url").clone();
        let Ok(next) = client.get(format!("{base}/api/next")).bearer(token).send() else {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        };
        if !next.status().is_success() {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        }
        let next: Value = serde_json::from_str(&next.body).expect("json");
        let Some(id) = next["item"]["text_id"].as_str() else {
            empty_in_a_row += 1;
            std::thread::sleep(Duration::from_millis(300));
            continue;
        };
        empty_in_a_row = 0;
        let label = next["item"]["candidates"][0]["id"]
            .as_str()
            .unwrap_or("billing");
        let body = json!({"item": {"text": id}, "answer": {"label": label}});
        if let Ok(answer) = client
            .post(format!("{base}/api/answer"))
            .bearer(token)
            .json(&body)
            .send()
        {
            if answer.status().as_u16() == 202 {
                answered.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}
