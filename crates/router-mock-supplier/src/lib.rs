//! A real HTTP server that pretends to be an OpenAI Chat Completions
//! supplier, scripted per request, for tests, demos and benchmarks.
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
//!     usage: Some(MockUsage { prompt_tokens: 10, completion_tokens: 2, ..MockUsage::default() }),
//!     chunk_delay_ms: 5,
//!     ..MockReply::default()
//! }));
//! // ... run the code under test ...
//! assert_eq!(mock.calls_for("gpt-x").len(), 2);
//! # Ok(())
//! # }
//! ```
//!
//! Any path ending in `/chat/completions` is the chat endpoint; every request
//! to it is recorded (see [`RecordedCall`]) and then gets the next script:
//! the queue of its `model` first, then the global queue, then the default.
//! A [`Script`] says whether to answer (JSON, or SSE when the request has
//! `"stream": true`), fail with a status, or break the connection in one of
//! several ways. Other paths get 404.
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

mod chat_endpoint;
mod chat_reply;
mod connection;
mod control;
mod playbook;
mod recorded_call;
mod response_body;
mod script;
mod server;

pub use recorded_call::RecordedCall;
pub use script::{MockReply, MockToolCall, MockUsage, Script};
pub use server::MockSupplier;
