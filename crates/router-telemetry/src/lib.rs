//! What the router reports of itself beyond its access line: each sampled
//! request's spans, exported over OTLP ([`otlp`], `ROUTER_OTLP_ENDPOINT`),
//! the standard `process_*` gauges ([`process`]) and the database's gauges
//! ([`database`]: the pool, holds outstanding, credits, job passes) that
//! `/metrics` renders. Nothing here knows HTTP: the server hands over a finished
//! request's timeline and asks for the gauges when scraped.

pub mod database;
pub mod otlp;
pub mod process;
