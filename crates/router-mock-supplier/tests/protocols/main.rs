//! The Messages and Responses endpoints over real HTTP, and what all three
//! protocols share: failure scripts, per-model queues and call recording.

#![expect(
    clippy::unwrap_used,
    reason = "test code: a failed step must fail the test"
)]

#[path = "../common/mod.rs"]
mod common;
mod faults;
mod harness;
mod messages;
mod queues;
mod responses;
