//! The Chat-native passthrough fields: read from a client's request by the
//! client parser, written to a Chat supplier by the supplier encoder.

/// Unknown top-level fields that are forwarded to Chat suppliers.
/// Everything else unknown is accepted and dropped; `store`, `service_tier`
/// and the like are never forwarded.
pub(crate) const NATIVE_ALLOWLIST: [&str; 6] = [
    "logit_bias",
    "logprobs",
    "top_logprobs",
    "metadata",
    "prediction",
    "verbosity",
];
