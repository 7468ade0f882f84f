//! Money as a person reads it: USD text from integer nano-USD, exact (no
//! floats): at least two decimals, more only where the amount has them.

use serde::Serialize;

/// An amount in both forms: the exact integer and its USD text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Money {
    pub nano_usd: i64,
    /// `$1.50`, `$0.000001234`, `-$2.00`.
    pub usd: String,
}

impl Money {
    pub fn of(nano_usd: i64) -> Self {
        Money {
            nano_usd,
            usd: usd(nano_usd),
        }
    }
}

/// `nano` nano-USD as USD text: `$` and whole dollars, then the nine
/// decimals with trailing zeros dropped, keeping two.
pub fn usd(nano: i64) -> String {
    const NANO_PER_USD: u64 = 1_000_000_000;
    let sign = if nano < 0 { "-" } else { "" };
    let magnitude = nano.unsigned_abs();
    let dollars = magnitude / NANO_PER_USD;
    let fraction = format!("{:09}", magnitude % NANO_PER_USD);
    let kept = fraction.trim_end_matches('0');
    let decimals = if kept.len() < 2 { &fraction[..2] } else { kept };
    format!("{sign}${dollars}.{decimals}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usd_text_is_exact() {
        assert_eq!(usd(0), "$0.00");
        assert_eq!(usd(1_500_000_000), "$1.50");
        assert_eq!(usd(10_000_000_000), "$10.00");
        assert_eq!(usd(1_234), "$0.000001234");
        assert_eq!(usd(1), "$0.000000001");
        assert_eq!(usd(120_000_000), "$0.12");
        assert_eq!(usd(123_000_000), "$0.123");
        assert_eq!(usd(-2_000_000_000), "-$2.00");
        assert_eq!(usd(i64::MAX), "$9223372036.854775807");
        assert_eq!(usd(i64::MIN), "-$9223372036.854775808");
    }

    #[test]
    fn money_serializes_both_forms() {
        let json = serde_json::to_value(Money::of(1_250_000_000)).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"nano_usd": 1_250_000_000_i64, "usd": "$1.25"})
        );
    }
}
