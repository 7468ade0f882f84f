//! What the router reports of itself beyond its access line: each sampled
//! request's spans, exported over OTLP ([`otlp`], `ROUTER_OTLP_ENDPOINT`),
//! the metrics recorder and its descriptions ([`recorder`]), the standard
//! `process_*` gauges ([`process`]) and the database's gauges
//! ([`database`]: the pool, holds outstanding, credits, job passes) that
//! `/metrics` renders, and panics as log lines ([`panic`]). Nothing here
//! knows HTTP: the server hands over a finished request's timeline and asks
//! for the text exposition when scraped.

pub mod database;
pub mod otlp;
pub mod panic;
pub mod process;
pub mod recorder;
