//! The HTTP mechanics under the router's edge (`router-server`), knowing
//! nothing of its routes, credentials or envelopes: what a client
//! connection may hold and for how long ([`connection`]), request bodies
//! read under a size limit and a pace ([`body`]), and the per-address
//! throttle of failed operator sign-ins ([`admin_throttle`]). Each is
//! tested here without a router.

#![warn(unreachable_pub)]

pub mod admin_throttle;
pub mod body;
pub mod connection;
