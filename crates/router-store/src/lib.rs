//! PostgreSQL storage for the router: accounts, API keys, wallets, holds,
//! the double-entry ledger, requests and attempts. Implements
//! [`router_core::store::Store`], the request pipeline's ports
//! ([`router_core::store::ExperimentStore`],
//! [`router_core::store::AffinityStore`],
//! [`router_core::store::ResponseCacheStore`]) and
//! [`router_core::store::VideoStore`] on [`Database`].
//!
//! - diesel 2.3 with diesel-async 0.9 over tokio-postgres (no libpq) and a
//!   deadpool pool, which lives only in [`Database`]; every query function
//!   takes `&mut AsyncPgConnection`, so they compose inside one transaction.
//! - Migrations are embedded and forward-only ([`migrations`]).
//! - Money is integer nano-USD in BIGINT columns, never a float.
//! - The lifecycle's hot statements (reserve, settle with its attempt, void,
//!   record a failed attempt) are each one statement and one round trip
//!   ([`billing`]); key lookups are cached, kept honest by LISTEN ([`key_cache`]).
//!
//! With the `test-support` feature, `test_support::TestDatabase` gives each
//! test a fresh database cloned from a migrated template.

#![warn(unreachable_pub)]

pub mod accounts;
pub mod affinity;
pub mod api_keys;
pub mod audit;
mod backoff;
pub mod billing;
mod bounds;
pub mod catalog_releases;
pub mod channels;
mod crash_points;
pub mod data_protection;
mod database;
mod error;
pub mod experiments;
mod front;
pub mod gauges;
mod group_commit;
pub mod history;
pub mod jobs;
pub mod key_cache;
mod key_turns;
pub mod lease_book;
pub mod leases;
pub mod listener;
pub mod migrations;
mod pg_array;
mod prepared;
pub mod response_cache;
pub mod schema;
mod secret;
pub mod sessions;
#[cfg(feature = "test-support")]
pub mod test_support;
pub mod thinking_seal_keys;
mod timestamps;
pub mod uploads;
pub mod usage;
pub mod videos;

pub use accounts::{AccountRow, AccountView};
pub use api_keys::{NewApiKey, hash_api_key};
pub use audit::Reconciliation;
pub use bounds::{DatabaseLimits, PooledConnection};
pub use database::Database;
pub use error::AdminError;
pub use history::{AttemptView, HoldView, LedgerEntryView, RequestView, UsageView};
pub use lease_book::LeaseSettings;
pub use sessions::{MagicLinkIssue, NewSession, SessionRecord};
