//! One HTTP attempt under async-openai, with two things async-openai's own transport lacks: a
//! cap on the response body, enforced while it is read (a body declared larger is refused before
//! reading; one that grows past the cap is dropped at the cap, never buffered whole), and the
//! `retry-after` header of a 429 / 5xx, which async-openai's error type would not keep.

use std::time::Duration;

use async_openai::error::OpenAIError;
use async_openai::middleware::HttpRequestFactory;

use super::detail::bounded;
use super::retry::parse_retry_after;

/// Bytes of a 429 / 5xx body read for its error text (the rest is not read).
const ERROR_BODY_BYTES: usize = 4096;

/// A 429 or 5xx, with its `retry-after` and the start of its body.
#[derive(Debug, thiserror::Error)]
#[error("HTTP {status}")]
pub(super) struct RetryableStatus {
    pub status: u16,
    pub retry_after: Option<Duration>,
    pub body: String,
}

/// A response body past the cap: not read further.
#[derive(Debug, thiserror::Error)]
#[error("response body over {limit} bytes")]
pub(super) struct OversizedResponse {
    pub limit: usize,
    /// Its `content-length`, when it declared one.
    pub declared: Option<u64>,
}

/// The start of a body: at most the cap, and whether that was all of it.
struct Prefix {
    bytes: Vec<u8>,
    whole: bool,
}

/// Read `response`'s body chunk by chunk, keeping at most `cap` bytes: the first chunk that
/// would pass the cap ends the read (and, the response dropped, the connection).
async fn read_prefix(response: &mut reqwest::Response, cap: usize) -> reqwest::Result<Prefix> {
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if bytes.len() + chunk.len() > cap {
            let room = cap - bytes.len();
            bytes.extend_from_slice(&chunk[..room]);
            return Ok(Prefix {
                bytes,
                whole: false,
            });
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(Prefix { bytes, whole: true })
}

/// One HTTP attempt: its response handed on to async-openai with the body already read (at
/// most `max_body` bytes), a 429 / 5xx as a [`RetryableStatus`], a body past `max_body` as an
/// [`OversizedResponse`].
pub(super) async fn single_attempt(
    http: reqwest::Client,
    max_body: usize,
    factory: HttpRequestFactory,
) -> Result<reqwest::Response, OpenAIError> {
    let request = factory.build().await?;
    let mut response = http.execute(request).await.map_err(OpenAIError::Reqwest)?;
    let status = response.status();
    if status.as_u16() == 429 || status.is_server_error() {
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        // Only for the error text: a read that fails leaves it empty.
        let start = read_prefix(&mut response, ERROR_BODY_BYTES.min(max_body))
            .await
            .map(|p| p.bytes)
            .unwrap_or_default();
        return Err(OpenAIError::Boxed(Box::new(RetryableStatus {
            status: status.as_u16(),
            retry_after,
            body: bounded(&String::from_utf8_lossy(&start)),
        })));
    }
    let declared = response.content_length();
    if declared.is_some_and(|length| length > max_body as u64) {
        return Err(OpenAIError::Boxed(Box::new(OversizedResponse {
            limit: max_body,
            declared,
        })));
    }
    let version = response.version();
    let headers = std::mem::take(response.headers_mut());
    let body = read_prefix(&mut response, max_body)
        .await
        .map_err(OpenAIError::Reqwest)?;
    if !body.whole {
        return Err(OpenAIError::Boxed(Box::new(OversizedResponse {
            limit: max_body,
            declared,
        })));
    }
    let mut read = http::Response::new(body.bytes);
    *read.status_mut() = status;
    *read.version_mut() = version;
    *read.headers_mut() = headers;
    Ok(reqwest::Response::from(read))
}
