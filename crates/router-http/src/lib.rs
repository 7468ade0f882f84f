//! The HTTP mechanics under the router's edge (`router-server`), knowing
//! nothing of its routes, credentials or envelopes: which `accept`
//! failures pass ([`accept`]), what a client connection may hold and for how long ([`connection`]), request bodies
//! read under a size limit and a pace ([`body`]), the client behind
//! trusted proxies ([`client_addr`]), query strings and path segments
//! decoded exactly ([`query`]), the public base URL and its origin
//! ([`public_url`]), and the per-address throttle of failed operator
//! authentication ([`admin_throttle`]). Each is tested here without a
//! router.

#![warn(unreachable_pub)]

pub mod accept;
pub mod admin_throttle;
pub mod body;
pub mod client_addr;
pub mod connection;
pub mod public_url;
pub mod query;
