//! The router process around its HTTP edge (`router-server`): which
//! background jobs run and how each instance schedules them ([`jobs`]).
//! The `router` binary (`main.rs`) adds the settings, the start-up wiring
//! and the operator's commands.

pub mod jobs;
