//! Money as integer nano-USD, and token prices. No float ever touches billing.

use serde::{Deserialize, Serialize};
use std::fmt;

/// An amount of money in nano-USD (1 USD = 1_000_000_000 nano-USD).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct NanoUsd(pub i64);

/// Nano-USD in one US dollar.
pub const NANOS_PER_USD: i64 = 1_000_000_000;

impl NanoUsd {
    /// Nothing.
    pub const ZERO: NanoUsd = NanoUsd(0);

    /// The sum, or `None` on overflow.
    pub fn checked_add(self, other: NanoUsd) -> Option<NanoUsd> {
        self.0.checked_add(other.0).map(NanoUsd)
    }

    /// The difference, or `None` on overflow.
    pub fn checked_sub(self, other: NanoUsd) -> Option<NanoUsd> {
        self.0.checked_sub(other.0).map(NanoUsd)
    }

    /// Whether the amount is below zero.
    pub fn is_negative(self) -> bool {
        self.0 < 0
    }

    /// The amount as a USD decimal string with nine fraction digits, exact.
    pub fn to_usd_string(self) -> String {
        let sign = if self.0 < 0 { "-" } else { "" };
        let abs = self.0.unsigned_abs();
        let whole = abs / NANOS_PER_USD as u64;
        let frac = abs % NANOS_PER_USD as u64;
        format!("{sign}{whole}.{frac:09}")
    }

    /// The amount in USD for JSON display (`usage.cost`). Display only: the
    /// ledger keeps the integer; the JSON number is printed from the exact
    /// decimal string, so it never carries binary-float noise.
    pub fn to_usd_json(self) -> serde_json::Value {
        let text = self.to_usd_string();
        let trimmed = text.trim_end_matches('0').trim_end_matches('.');
        serde_json::from_str::<serde_json::Number>(trimmed)
            .map(serde_json::Value::Number)
            .unwrap_or(serde_json::Value::Null)
    }
}

impl fmt::Display for NanoUsd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "${}", self.to_usd_string())
    }
}

/// A token price: nano-USD per one million tokens.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct PricePerMTok(pub i64);

/// A rate card for one model or route: what a million tokens of each kind cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Rates {
    /// The price of input tokens.
    pub input: PricePerMTok,
    /// The price of output tokens.
    pub output: PricePerMTok,
    /// Cache reads; defaults to the input price when not configured.
    pub cache_read: Option<PricePerMTok>,
    /// Cache writes; defaults to the input price when not configured.
    pub cache_write: Option<PricePerMTok>,
}

/// A charge too large to represent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("charge does not fit in i64 nano-USD")]
pub struct ChargeOverflow;

impl Rates {
    /// The charge for one request's usage, rounded once (half up) at the end.
    ///
    /// Input tokens include cache reads and writes (see [`crate::Usage`]), so
    /// those are priced at their own rate and taken out of the plain input.
    pub fn charge(&self, usage: &crate::Usage) -> Result<NanoUsd, ChargeOverflow> {
        let cache_read = usage.cache_read_input_tokens;
        let cache_write = usage.cache_creation_input_tokens;
        let plain_input = usage.input_tokens.saturating_sub(cache_read + cache_write);
        let read_price = self.cache_read.unwrap_or(self.input).0;
        let write_price = self.cache_write.unwrap_or(self.input).0;
        let total: i128 = i128::from(plain_input) * i128::from(self.input.0)
            + i128::from(cache_read) * i128::from(read_price)
            + i128::from(cache_write) * i128::from(write_price)
            + i128::from(usage.output_tokens) * i128::from(self.output.0);
        let rounded = (total + 500_000) / 1_000_000;
        i64::try_from(rounded)
            .map(NanoUsd)
            .map_err(|_| ChargeOverflow)
    }

    /// Worst case for a reservation: `input_tokens` of plain input (the most
    /// expensive input kind) plus `max_output_tokens` of output.
    pub fn worst_case(
        &self,
        input_tokens: u64,
        max_output_tokens: u64,
    ) -> Result<NanoUsd, ChargeOverflow> {
        let input_price = self
            .input
            .0
            .max(self.cache_read.map_or(0, |p| p.0))
            .max(self.cache_write.map_or(0, |p| p.0));
        let total: i128 = i128::from(input_tokens) * i128::from(input_price)
            + i128::from(max_output_tokens) * i128::from(self.output.0);
        let rounded = (total + 999_999) / 1_000_000;
        i64::try_from(rounded)
            .map(NanoUsd)
            .map_err(|_| ChargeOverflow)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Usage;

    #[test]
    fn usd_strings_are_exact() {
        assert_eq!(NanoUsd(1_500_000_000).to_usd_string(), "1.500000000");
        assert_eq!(NanoUsd(7).to_usd_string(), "0.000000007");
        assert_eq!(NanoUsd(-7).to_usd_string(), "-0.000000007");
        assert_eq!(NanoUsd(1_500_000_000).to_usd_json(), serde_json::json!(1.5));
        assert_eq!(NanoUsd(0).to_usd_json(), serde_json::json!(0));
    }

    #[test]
    fn charge_rounds_once_half_up() {
        // 1 token at 1.5 nano-USD/token-equivalent: 1_500_000 per MTok.
        let rates = Rates {
            input: PricePerMTok(1_500_000),
            output: PricePerMTok(2_500_000),
            ..Default::default()
        };
        let usage = Usage {
            input_tokens: 1,
            output_tokens: 1,
            ..Default::default()
        };
        // 1.5 + 2.5 = 4.0 exactly: rounding once, not per kind (2 + 3 = 5).
        assert_eq!(rates.charge(&usage), Ok(NanoUsd(4)));
    }

    #[test]
    fn cache_tokens_use_their_own_rates() {
        let rates = Rates {
            input: PricePerMTok(3_000_000_000),
            output: PricePerMTok(15_000_000_000),
            cache_read: Some(PricePerMTok(300_000_000)),
            cache_write: Some(PricePerMTok(3_750_000_000)),
        };
        let usage = Usage {
            input_tokens: 1_000,
            cache_read_input_tokens: 600,
            cache_creation_input_tokens: 100,
            output_tokens: 10,
            ..Default::default()
        };
        // 300*3000 + 600*300 + 100*3750 + 10*15000 = 900000+180000+375000+150000
        assert_eq!(rates.charge(&usage), Ok(NanoUsd(1_605_000)));
    }

    #[test]
    fn overflow_is_an_error_not_a_wrap() {
        let rates = Rates {
            input: PricePerMTok(i64::MAX),
            output: PricePerMTok(i64::MAX),
            ..Default::default()
        };
        let usage = Usage {
            input_tokens: u32::MAX.into(),
            output_tokens: u32::MAX.into(),
            ..Default::default()
        };
        assert_eq!(rates.charge(&usage), Err(ChargeOverflow));
    }
}
