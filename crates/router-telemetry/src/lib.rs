//! What the router reports of itself: each request's access line and
//! per-request metrics ([`request_log`], filled by the HTTP edge as the
//! request goes and written when its answer has gone), each sampled
//! request's spans, exported over OTLP ([`otlp`], `ROUTER_OTLP_ENDPOINT`),
//! the metrics recorder and its descriptions ([`recorder`]), the standard
//! `process_*` gauges ([`process`]) and the database's gauges
//! ([`database`]: the pool, holds outstanding, credits, job passes) that
//! `/metrics` renders, and panics as log lines ([`panic`]). Nothing here
//! serves HTTP: the edge hands over what it saw and asks for the text
//! exposition when scraped.

pub mod database;
pub mod otlp;
pub mod panic;
pub mod process;
pub mod recorder;
pub mod request_log;
