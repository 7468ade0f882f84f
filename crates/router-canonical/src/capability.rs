//! What a request needs from a route, derived once at parse time.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A capability a route declares in the catalog and a request may require.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Capability {
    /// The route accepts tool definitions and returns tool calls.
    Tools,
    /// The route accepts images in the input.
    Vision,
    /// The route honours stop sequences.
    Stop,
    /// The route takes a reasoning effort.
    Reasoning,
    /// The route takes a thinking configuration.
    Thinking,
    /// The route honours structured output.
    ResponseFormat,
    /// The route streams.
    Streaming,
    /// The route honours prompt-cache markers (automatic `cache_control`).
    PromptCache,
}

impl Capability {
    /// Every capability.
    pub const ALL: [Capability; 8] = [
        Capability::Tools,
        Capability::Vision,
        Capability::Stop,
        Capability::Reasoning,
        Capability::Thinking,
        Capability::ResponseFormat,
        Capability::Streaming,
        Capability::PromptCache,
    ];

    /// The capability's catalog name.
    pub fn as_str(self) -> &'static str {
        match self {
            Capability::Tools => "tools",
            Capability::Vision => "vision",
            Capability::Stop => "stop",
            Capability::Reasoning => "reasoning",
            Capability::Thinking => "thinking",
            Capability::ResponseFormat => "response_format",
            Capability::Streaming => "streaming",
            Capability::PromptCache => "prompt_cache",
        }
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A catalog name that is no capability.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown capability `{0}`")]
pub struct UnknownCapability(pub String);

impl FromStr for Capability {
    type Err = UnknownCapability;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Capability::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| UnknownCapability(s.to_owned()))
    }
}

/// A small set of capabilities (a bit set: cheap to copy and compare).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CapabilitySet(u16);

impl CapabilitySet {
    /// Add `c`.
    pub fn insert(&mut self, c: Capability) {
        self.0 |= 1 << (c as u16);
    }

    /// Whether `c` is in the set.
    pub fn contains(self, c: Capability) -> bool {
        self.0 & (1 << (c as u16)) != 0
    }

    /// Whether every capability of `other` is in this set.
    pub fn is_superset_of(self, other: CapabilitySet) -> bool {
        self.0 & other.0 == other.0
    }

    /// The capabilities in the set, in order.
    pub fn iter(self) -> impl Iterator<Item = Capability> {
        Capability::ALL
            .into_iter()
            .filter(move |c| self.contains(*c))
    }
}

impl FromIterator<Capability> for CapabilitySet {
    fn from_iter<I: IntoIterator<Item = Capability>>(iter: I) -> Self {
        let mut set = CapabilitySet::default();
        for c in iter {
            set.insert(c);
        }
        set
    }
}

/// What routing must honour for one request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Requirements {
    /// The capabilities a route must have.
    pub capabilities: CapabilitySet,
    /// Only a route speaking the inbound protocol can carry this request
    /// without loss (native-only fields, `system` role in Messages, ...).
    pub native_only: bool,
    /// A temperature above 1: routes whose protocol caps it at 1 are ineligible.
    pub temperature_above_one: bool,
    /// Non-zero frequency or presence penalties: Messages has neither, so a
    /// Messages route would have to drop them.
    pub penalties: bool,
}

impl Requirements {
    /// Require `c`.
    pub fn require(&mut self, c: Capability) {
        self.capabilities.insert(c);
    }

    /// Whether `c` is required.
    pub fn needs(&self, c: Capability) -> bool {
        self.capabilities.contains(c)
    }
}
