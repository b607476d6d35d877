//! The desk's JSON bodies as the routes read them.

use axum::body::Body;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;

use super::{ItemRequest, JsonBody};
use crate::review::queue::ItemKey;

fn request(content_type: &str, body: &str) -> Request {
    Request::builder()
        .method("POST")
        .uri("/api/skip")
        .header("content-type", content_type)
        .body(Body::from(body.to_string()))
        .expect("a request")
}

async fn read(content_type: &str, body: &str) -> Result<ItemKey, (StatusCode, String)> {
    JsonBody::<ItemRequest>::from_request(request(content_type, body), &())
        .await
        .map(|JsonBody(read)| ItemKey::from(read.item))
        .map_err(|refusal| (refusal.0, refusal.1))
}

#[tokio::test]
async fn a_body_is_json_of_a_request_the_desk_reads_or_refused_with_why() {
    let key = read("application/json", r#"{"item": {"text": "t-1"}}"#).await;
    assert_eq!(key, Ok(ItemKey::Text("t-1".into())));
    let (status, _) = read("text/plain", r#"{"item": {"text": "t-1"}}"#)
        .await
        .unwrap_err();
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let (status, why) = read("application/json", r#"{"item": {"text": "t-1"}, "x": 1}"#)
        .await
        .unwrap_err();
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(why.starts_with("not a request the desk reads"), "{why}");
}

#[tokio::test]
async fn a_body_past_the_limit_is_refused_as_too_large_with_the_desk_s_error_body() {
    let large = format!(r#"{{"item": {{"text": "{}"}}}}"#, "x".repeat(3 << 20));
    let refusal = JsonBody::<ItemRequest>::from_request(request("application/json", &large), &())
        .await
        .err()
        .expect("refused");
    assert_eq!(refusal.0, StatusCode::PAYLOAD_TOO_LARGE);
    let response = axum::response::IntoResponse::into_response(refusal);
    let body = axum::body::to_bytes(response.into_body(), 1 << 16)
        .await
        .expect("a small body");
    let error: serde_json::Value = serde_json::from_slice(&body).expect("the desk's JSON");
    assert!(error["error"].is_string(), "{error}");
}
