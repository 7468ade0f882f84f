//! A real HTTP server that pretends to be an LLM supplier speaking three
//! protocols (OpenAI Chat Completions, Anthropic Messages, OpenAI
//! Responses), scripted per request, for tests, demos and benchmarks.
//!
//! # In-process use
//!
//! ```no_run
//! use std::net::SocketAddr;
//! use router_mock_supplier::{MockReply, MockSupplier, MockUsage, Script};
//!
//! # async fn demo() -> std::io::Result<()> {
//! let mock = MockSupplier::start(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
//! // Point the code under test at `mock.base_url()` ("http://127.0.0.1:PORT/v1").
//! mock.enqueue_for("gpt-x", Script::status(429));          // first gpt-x request
//! mock.enqueue(Script::Reply(MockReply {                     // next request of any model
//!     text: "Hello!".into(),
//!     usage: Some(MockUsage { cached_tokens: Some(8), ..MockUsage::tokens(10, 2) }),
//!     chunk_delay_ms: 5,
//!     ..MockReply::default()
//! }));
//! // ... run the code under test ...
//! assert_eq!(mock.calls_for("gpt-x").len(), 2);
//! # Ok(())
//! # }
//! ```
//!
//! # Endpoints
//!
//! The protocol is chosen by the end of the path, so any prefix works
//! (`/v1/...`, `/openai/deployments/x/...`). Under `/openai/deployments/`
//! the Chat, Images and videos endpoints answer as Azure OpenAI does: 401
//! without an `api-key` (or bearer) header, 404 without an `api-version`
//! query parameter:
//!
//! | path ends in        | protocol          | stream (`"stream": true`)                                          | errors                                     |
//! |---------------------|-------------------|--------------------------------------------------------------------|--------------------------------------------|
//! | `/chat/completions` | Chat Completions  | `data:` chunks, then `data: [DONE]`                                | `{"error": {message, type, param, code}}`  |
//! | `/messages`         | Anthropic Messages| `event:` = `data.type`, `message_start` ... `message_stop`        | `{"type": "error", "error": {type, message}}` |
//! | `/responses`        | OpenAI Responses  | `event:` = `data.type`, `sequence_number`, `response.created` ... `response.completed` | `{"error": {message, type, param, code}}` |
//! | `/models/{m}:generateContent`, `:streamGenerateContent` | Google Gemini (Vertex too) | `data:` chunks; the last has `finishReason` and the usage (no terminator) | `{"error": {code, message, status}}`; 403 without `x-goog-api-key` or a bearer token |
//! | `/model/{m}/invoke`, `/invoke-with-response-stream` | Claude on Amazon Bedrock | AWS event stream of `chunk` events (`{"bytes": base64 Messages event}`) | `{"message"}`; 403 unless SigV4-signed with [`MOCK_AWS_ACCESS_KEY_ID`] |
//! | `/model/{m}/converse`, `/converse-stream` | Amazon Bedrock Converse | AWS event stream: `messageStart`, `contentBlock*`, `messageStop`, `metadata` (usage) | `{"message"}`; 403 unless SigV4-signed with [`MOCK_AWS_ACCESS_KEY_ID`] |
//! | `/images/generations` | OpenAI Images   | never streamed; `{created, data: [{b64_json}]}` (a valid PNG), or what a [`Script::Image`] answers (broken PNGs, a URL) | `{"error": {message, type, param, code}}` |
//!
//! `POST …/videos`, `GET …/videos/{id}` and `GET …/videos/{id}/content` are
//! the OpenAI videos API: each job follows the [`VideoPlan`] of its model
//! (complete after N polls by default, fail with a leaky text, drop the
//! connection after reading the creation, refuse it, never finish); see
//! [`MockSupplier::set_video_plan`] and [`MockSupplier::video_counts`].
//!
//! `GET .../images/content/{valid,truncated,bad_crc,not_png}.png` serves the
//! images URL answers point at, and `GET .../images/content/redirect?to=URL`
//! answers 302 to `URL` (the target is taken verbatim, not decoded); neither
//! is recorded.
//!
//! Every request to them is recorded (see [`RecordedCall`]; its `path` tells
//! the protocol) and then gets the next script: the queue of its `model`
//! first, then the global queue, then the default. Queues and the call log
//! are shared by the three protocols. A [`Script`] says whether to answer
//! (JSON, or SSE when the request has `"stream": true`), fail with a status,
//! redirect elsewhere ([`Script::Redirect`]), or break the connection or the
//! stream in one of several ways; the same
//! script works on every protocol, written in that protocol's wire format
//! (see [`MockReply`] and [`MockUsage`] for how each field is written).
//! Other paths get 404.
//!
//! The Messages and Responses formats are written here from the public
//! references, not with the router's wire crates, so that the mock can catch
//! the router's translation mistakes. [`MockReply::provider_extras`] adds
//! unknown fields and events a router must drop.
//!
//! # Out-of-process use
//!
//! The `mock-supplier` binary (`--listen`, `--default-reply`,
//! `--first-chunk-delay-ms`, `--chunk-delay-ms`) serves the same thing and is
//! scripted over HTTP through the control endpoints below. Scripts are the
//! JSON form of [`Script`], e.g. `{"kind": "reply", "text": "Hi"}`.
//!
//! # Control endpoints
//!
//! - `POST /_mock/scripts` with `{"model": "m"?, "script": {"kind": ...}}` enqueues;
//! - `PUT /_mock/default` with `{"script": {...}}` (or a bare script) sets the default;
//! - `GET /_mock/calls` returns `{"calls": [{"path", "headers": {name: value}, "body"}]}`;
//! - `POST /_mock/reset` clears queues and calls.
//!
//! Control requests are not recorded. Calls are kept until reset, so a long
//! benchmark should reset now and then.

#![warn(unreachable_pub)]

mod aws;
mod azure;
mod bedrock_endpoint;
mod chat_endpoint;
mod chat_reply;
mod connection;
mod control;
mod converse_endpoint;
mod endpoint;
mod gemini_endpoint;
mod google_auth;
mod images_endpoint;
mod messages_endpoint;
mod messages_reply;
mod openai_error;
mod playbook;
mod recorded_call;
mod reply_identity;
mod response_body;
mod responses_endpoint;
mod responses_reply;
mod script;
mod server;
pub mod smtp_sink;
mod sse;
mod usage_estimate;
mod videos_endpoint;
pub mod webhook_sink;

pub use aws::{MOCK_AWS_ACCESS_KEY_ID, MOCK_AWS_SECRET_ACCESS_KEY};
pub use google_auth::{MOCK_GOOGLE_CLIENT_EMAIL, MOCK_GOOGLE_PRIVATE_KEY};
pub use recorded_call::RecordedCall;
pub use script::{
    DEFAULT_STREAM_ERROR_MESSAGE, DEFAULT_THINKING_SIGNATURE, ImageAnswer, MockImage, MockReply,
    MockToolCall, MockUsage, Script,
};
pub use server::MockSupplier;
pub use videos_endpoint::{
    DEFAULT_VIDEO_BYTES, LEAKY_VIDEO_ERROR, VideoCallIdentity, VideoCounts, VideoPlan, video_bytes,
};
