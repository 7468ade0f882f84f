//! End-to-end tests: the real router (in-process hyper server on loopback)
//! against a fresh PostgreSQL database and the mock supplier, over real HTTP.
//! Run through `cargo xtask test` (it provides `DATABASE_URL`).

#![expect(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a test failure

mod admin;
mod auth;
mod billing;
mod catalog;
mod channels;
mod chat_completions;
mod cli;
mod completions;
mod connections;
mod crash;
mod cross_protocol;
mod dashboard_keys;
mod data_protection;
mod database_outage;
mod deployment;
mod docs;
mod drain;
mod experiments;
mod google_auth;
mod hardening;
mod harness;
mod images;
mod jobs;
mod key_limits;
mod key_policies;
mod messages;
mod observability;
mod operator_metrics;
mod otlp_export;
mod prompt_cache;
mod response_cache;
mod responses;
mod retries;
mod routes_matrix;
mod routing_policies;
mod sessions;
mod settings;
mod streaming;
mod supplier_failures;
mod thinking_signatures;
mod trace_ids;
mod uploads;
mod videos;
