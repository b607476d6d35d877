//! An answer's way from the page to the topics: taken by the desk, held for the undo window
//! (`POST /api/undo` takes it back), then published in order, or given back to the queue.

use std::sync::Arc;

use axum::extract::{Extension, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use super::{json, not_ready, now_ms, refuse, ItemRef, ItemRequest, JsonBody, Outlet, Shared};
use crate::review::answer::{Answer, DeskError, Publish};
use crate::review::desk::Body;
use crate::review::queue::{AnswerError, Item, ItemKey, Millis, Reviewer};
use crate::review::undo::{Held, Taker, UNDO_WINDOW};

#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum AnswerBody {
    Label(String),
    None,
    /// The text belongs to this open proposal.
    Proposal(String),
    Accept {
        label: String,
        #[serde(default)]
        name: Option<String>,
        #[serde(default)]
        description: Option<String>,
    },
    Reject,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AnswerRequest {
    item: ItemRef,
    answer: AnswerBody,
}

pub(super) async fn answer(
    State(shared): State<Arc<Shared>>,
    Extension(reviewer): Extension<Reviewer>,
    JsonBody(request): JsonBody<AnswerRequest>,
) -> Response {
    let answer = match request.answer {
        AnswerBody::Label(label) => Answer::Label(label),
        AnswerBody::None => Answer::NoneOfThese,
        AnswerBody::Proposal(id) => Answer::Proposal(id),
        AnswerBody::Accept {
            label,
            name,
            description,
        } => Answer::Accept {
            label,
            name,
            description,
        },
        AnswerBody::Reject => Answer::Reject,
    };
    let answer = match answer.normalised() {
        Ok(answer) => answer,
        Err(error) => return refuse(status_of(&error), error.to_string()),
    };
    if let Some(refused) = not_ready(&shared) {
        return refused;
    }
    let key = ItemKey::from(request.item);
    let now = now_ms();
    let taken = shared.desk().answer(&reviewer, &key, answer.clone(), now);
    let (item, publish) = match taken {
        Ok(taken) => taken,
        Err(error) => return refuse(status_of(&error), error.to_string()),
    };
    // Held for the undo window, then published by a task of its own (a client that goes away
    // changes nothing): whoever takes it out of `pending` first, the undo or this hold's
    // timer, has it.
    let hold = shared.pending.next_hold();
    shared.pending.hold(
        key.clone(),
        Held {
            hold,
            reviewer,
            item,
            answer,
            publish,
        },
    );
    let publisher = shared.clone();
    tokio::spawn(async move {
        tokio::time::sleep(UNDO_WINDOW).await;
        if let Some(held) = publisher.pending.take(&key, Taker::Timer(hold)) {
            publish_held_answer(publisher, held).await;
        }
    });
    let window = u64::try_from(UNDO_WINDOW.as_millis()).unwrap_or(u64::MAX);
    (
        StatusCode::ACCEPTED,
        json(&Accepted {
            undo_ms: window,
            undo_until_ms: now.saturating_add(window),
        }),
    )
        .into_response()
}

/// An answer taken: published when its undo window ends.
#[derive(Serialize)]
struct Accepted {
    /// How long from now `POST /api/undo` takes it back, in milliseconds.
    undo_ms: Millis,
    /// The same, as a time (milliseconds since the Unix epoch, the desk's clock).
    undo_until_ms: Millis,
}

/// Publish an answer whose window has ended — unless the item was answered another way
/// meanwhile (`gorag correct`, `gorag proposals`, another desk): the first answer read stands.
async fn publish_held_answer(shared: Arc<Shared>, held: Held) {
    if shared.desk().answered_elsewhere(&held.item.key) {
        tracing::info!(
            "an answer held for undo was not published: its item was answered another way meanwhile"
        );
        return;
    }
    // A refusal puts the item back in the queue and is logged.
    let _ = publish_answer(shared, held.item, held.answer, held.publish).await;
}

/// Take back an answer still in its undo window: the item is the reviewer's next again.
pub(super) async fn undo(
    State(shared): State<Arc<Shared>>,
    Extension(reviewer): Extension<Reviewer>,
    JsonBody(request): JsonBody<ItemRequest>,
) -> Response {
    let key = ItemKey::from(request.item);
    match shared.pending.take(&key, Taker::Reviewer(&reviewer)) {
        Some(held) => {
            shared.desk().take_back(held.item, &reviewer, now_ms());
            StatusCode::NO_CONTENT.into_response()
        }
        None => refuse(
            StatusCode::CONFLICT,
            "nothing of yours to undo for that item: answers are held 5 s, then published",
        ),
    }
}

/// Publish every answer still in its window, now (the desk is stopping).
pub async fn publish_held(shared: Arc<Shared>) {
    for held in shared.pending.take_all() {
        publish_held_answer(shared.clone(), held).await;
    }
}

/// Send an answer's events in order; count it once all are acknowledged, or give the item
/// back.
async fn publish_answer(
    shared: Arc<Shared>,
    item: Item<Body>,
    answer: Answer,
    publish: Vec<Publish>,
) -> Result<(), String> {
    for event in &publish {
        if let Err(error) = send(&shared.outlet, event).await {
            tracing::warn!(%error, "the desk could not publish an answer; the item waits again");
            shared.desk().restore(item);
            return Err(error);
        }
    }
    shared.desk().published(&item, &answer);
    Ok(())
}

fn status_of(error: &DeskError) -> StatusCode {
    match error {
        DeskError::Queue(AnswerError::Answered) => StatusCode::CONFLICT,
        DeskError::Queue(AnswerError::HeldByAnother) => StatusCode::CONFLICT,
        DeskError::Queue(AnswerError::NotOffered) => StatusCode::CONFLICT,
        DeskError::Queue(AnswerError::Unknown) => StatusCode::NOT_FOUND,
        DeskError::UnknownLabel(_)
        | DeskError::LabelExists(_)
        | DeskError::RoundSent(_)
        | DeskError::Refused(_)
        | DeskError::Mismatch(_)
        | DeskError::Proposal(_) => StatusCode::UNPROCESSABLE_ENTITY,
        DeskError::NotOpen(_) => StatusCode::CONFLICT,
    }
}

async fn send(outlet: &Outlet, event: &Publish) -> Result<(), String> {
    let (topic, key, payload) = match event {
        Publish::Label { key, event } => {
            (&outlet.labels_topic, key.clone(), serde_json::to_vec(event))
        }
        Publish::Proposal(decided) => (
            &outlet.proposals_topic,
            decided.record_key(),
            serde_json::to_vec(decided),
        ),
    };
    let payload = payload.map_err(|e| e.to_string())?;
    outlet
        .producer
        .send(topic, Some(key.as_bytes()), &payload)
        .await
        .map_err(|e| e.to_string())
}
