//! Integration tests against a real PostgreSQL (`DATABASE_URL`, set by
//! `cargo xtask test`). Each test gets a fresh database cloned from the
//! migrated template, so they run in parallel.

// Helpers outside `#[test]` functions panic on failure like the tests do
// (clippy's allow-unwrap-in-tests covers only the test functions).
#![expect(clippy::unwrap_used)]

mod accounts_email;
mod api_keys;
mod billing;
mod catalog_releases;
mod ceiling;
mod data_protection;
mod integrity;
mod jobs;
mod key_policies;
mod leases;
mod ledger;
mod migrations;
mod outages;
mod round_trips;
mod routing_fronts;
mod schema;
mod seed;
mod thinking_seal_keys;
