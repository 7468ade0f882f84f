//! The router's HTTP edge: the route table, guards, bodies, replies,
//! streams and per-protocol error envelopes, and a thin handler per route
//! that turns HTTP into one call of a wing or core.
//!
//! The HTTP mechanics that know no route (connections, paced bodies, client
//! addresses) are `router-http`'s. Protocol rules live in the wire crates,
//! every policy and the lifecycle in `router-core`, storage in
//! `router-store`, the product's other rules in its wings.

#![warn(unreachable_pub)]

pub mod admin;
pub mod admin_listener;
pub mod api_bodies;
pub mod app;
pub mod auth;
pub mod body;
pub mod call;
pub mod caller;
pub mod catalog_api;
pub mod channels;
pub mod client_stream;
pub mod correlation;
pub mod dashboard;
pub mod data_protection;
pub mod dispatch;
pub mod docs;
pub mod health;
pub mod images;
pub mod inference;
pub mod inference_headers;
pub mod jobs;
pub mod messages;
pub mod metrics;
pub mod openapi;
pub mod reply;
pub mod routes;
pub mod server;
pub mod session;
pub mod sign_in;
pub mod starting;
pub mod surfaces;
pub mod token_count;
pub mod uploads;
pub mod videos;

#[cfg(test)]
mod test_headers;

pub use app::App;
pub use server::{ServeError, serve, serve_routes};
