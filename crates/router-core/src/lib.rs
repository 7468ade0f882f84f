//! The request lifecycle: catalog, route selection, retries within one
//! deadline, pricing, and the single reservation that settles once; and
//! the request pipeline around it ([`Gateway::handle`]: experiment variant,
//! prompt-cache affinity, exact-response cache, then the lifecycle).
//!
//! Core knows no SQL and no HTTP server. It talks to storage through
//! [`store::Store`] (the pipeline's policies through
//! [`store::ExperimentStore`], [`store::AffinityStore`] and
//! [`store::ResponseCacheStore`], video jobs through [`store::VideoStore`])
//! and to suppliers through [`supplier::Suppliers`]; the
//! `router-store` and `router-supply` crates implement them and the server
//! wires them together.

#![warn(unreachable_pub)]

pub mod access;
pub mod affinity;
pub mod catalog;
pub mod connection;
pub mod experiments;
pub mod failpoints;
pub mod fingerprint;
pub mod gateway;
pub mod gateway_request;
pub mod image_input;
pub mod images;
pub mod jobs;
pub mod key_policy;
pub mod maintenance;
pub mod ownership;
pub mod pipeline;
pub mod pricing;
pub mod product_codes;
pub mod response_cache;
pub mod routing;
pub mod routing_options;
pub mod shutdown;
pub mod store;
pub mod supplier;
pub mod thinking_seal;
pub mod throttle;
pub mod token_estimate;
pub mod trace;
pub mod trace_context;
pub mod video_jobs;
pub mod videos;

pub use catalog::{
    Catalog, CatalogError, ChatCompat, Modality, Model, Pricing, Problem, Route, Supplier,
};
pub use experiments::{Experiment, ExperimentStatus, SystemMode, Variant};
pub use gateway::{Abandoned, Gateway, GatewayConfig, LiveStream, Outcome, StreamItem};
pub use gateway_request::{GatewayRequest, PromptCacheMode};
pub use images::{GeneratedPng, ImageCall};
pub use key_policy::{KeyLimit, KeyLimits, KeyPolicy, SpendWindow};
pub use pipeline::{Call, HandleError, Handled, Reply, UploadReferences};
pub use routing::Plan;
pub use routing_options::{Percent, RoutingOptions};
pub use supplier::{
    AttemptCall, AttemptCause, AttemptError, Encoding, EventStream, FailureKind, Retry,
    SubmitError, SupplierReply, Suppliers, VideoChunks, VideoContent,
};
pub use thinking_seal::SealKey;
pub use trace::RequestTrace;
pub use trace_context::TraceContext;
