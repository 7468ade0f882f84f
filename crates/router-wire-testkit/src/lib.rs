//! Test-only helpers shared by the tests of the wire crates
//! (`router-chat`, `router-messages`, `router-responses`,
//! `router-completions`, `router-gemini`, `router-converse`); each takes it as a `[dev-dependencies]` entry only.
//!
//! * [`codecs`]: a body through a client codec, a request through a supplier one.
//! * [`frames`]: SSE frames of each protocol's shape, from JSON values.
//! * [`golden`]: read `fixtures/<protocol>/<case>/`, compare JSON values and
//!   SSE frames, rewrite the expectations under `UPDATE_GOLDEN=1`.
//! * [`rejection`]: build request bodies from a base and check tables of
//!   rejected (with the `param` each must name) and accepted bodies.
//! * [`strategy`]: proptest strategies for the canonical values every wire
//!   protocol carries the same way.
//! * [`supplier`]: the supplier half of a golden case (upstream body, reply,
//!   SSE or AWS event-stream events), the same for every dialect.
//!
//! What differs per protocol (the cases themselves, the conversions, the
//! stream rules) stays in each crate's tests.

#![warn(unreachable_pub)]
// Test-only code: a panic is how a helper reports a failed test, so `unwrap`
// and `expect` are allowed here as they are in the tests that call it.
#![expect(
    clippy::unwrap_used,
    reason = "test-only helpers: a panic reports the failure"
)]

pub mod codecs;
pub mod frames;
pub mod golden;
pub mod rejection;
pub mod strategy;
pub mod supplier;

/// The gateway's routing options of a body (`zdr`, `min_discount_percent`),
/// which the gateway reads through `ClientCodec::parse_request_with`.
pub use router_core::{Percent, RoutingOptions};
