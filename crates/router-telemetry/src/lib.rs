//! What the router reports of itself beyond its access line: each sampled
//! request's spans, exported over OTLP ([`otlp`], `ROUTER_OTLP_ENDPOINT`),
//! and the standard `process_*` gauges ([`process`]) that `/metrics`
//! renders. Nothing here knows HTTP: the server hands over a finished
//! request's timeline and asks for the gauges when scraped.

pub mod otlp;
pub mod process;
