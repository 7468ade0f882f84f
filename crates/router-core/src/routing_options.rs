//! The gateway's routing fields of every inference body: `min_discount_percent`
//! and `zdr`. They are no protocol's members: the server reads them as
//! [`BodyExtensions`] (`ClientCodec::parse_request_with`), so all four
//! surfaces validate them the same way, and a codec's plain `parse_request`
//! treats them as any unknown member. They travel beside the canonical
//! request, in a [`GatewayRequest`](crate::GatewayRequest).

use router_canonical::{ApiError, BodyExtensions};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A percentage as an exact decimal: `units / 10^scale` percent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Percent {
    /// The digits, as an integer.
    pub units: i64,
    /// How many of them are decimals.
    pub scale: u32,
}

impl Percent {
    /// Whether `actual / list` is a discount of at least this percentage:
    /// `(list - actual) / list >= units / (100 * 10^scale)`, in integers.
    pub fn is_met(self, list: i64, actual: i64) -> bool {
        if list <= 0 {
            return false;
        }
        let lhs = (i128::from(list) - i128::from(actual)) * 100 * 10i128.pow(self.scale);
        let rhs = i128::from(self.units) * i128::from(list);
        lhs >= rhs
    }

    /// Parse a JSON number's shortest decimal form exactly.
    fn from_number(n: &serde_json::Number) -> Option<Percent> {
        let text = n.to_string();
        if text.contains(['e', 'E']) {
            let f = n.as_f64()?;
            return Percent::from_decimal_str(&format!("{f:.12}"));
        }
        Percent::from_decimal_str(&text)
    }

    fn from_decimal_str(text: &str) -> Option<Percent> {
        let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
        let frac = frac.trim_end_matches('0');
        let scale = u32::try_from(frac.len()).ok().filter(|s| *s <= 12)?;
        let units: i64 = format!("{whole}{frac}").parse().ok()?;
        Some(Percent { units, scale })
    }

    fn within(self, max_units: i64, max_scale: u32) -> bool {
        let lhs = i128::from(self.units) * 10i128.pow(max_scale);
        let rhs = i128::from(max_units) * 10i128.pow(self.scale);
        self.units >= 0 && lhs <= rhs
    }
}

/// A gateway's routing constraints read from a request body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RoutingOptions {
    /// Explicit minimum savings against the verified list price, for input
    /// and output independently.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_discount: Option<Percent>,
    /// The request requires a verified zero-data-retention route.
    #[serde(default)]
    pub zdr: bool,
}

/// A gateway's routing fields, taken out of a body's unknown members.
impl BodyExtensions for RoutingOptions {
    fn take(&mut self, members: &mut Map<String, Value>) -> Result<(), ApiError> {
        *self = RoutingOptions::take_from(members)?;
        Ok(())
    }

    /// Image URLs go to suppliers, which fetch them: public hosts only
    /// (issue 33), a rule of the gateway's rather than of the protocols'.
    fn check_image_url(&self, param: &str, url: &str) -> Result<(), ApiError> {
        router_canonical::parse::public_http_image_url(param, url)
    }
}

impl RoutingOptions {
    /// Take `min_discount_percent` and `zdr` out of a body's unknown fields.
    pub fn take_from(extra: &mut Map<String, Value>) -> Result<RoutingOptions, ApiError> {
        let mut options = RoutingOptions::default();
        match extra.remove("min_discount_percent") {
            None | Some(Value::Null) => {}
            Some(Value::Number(n)) => {
                let percent = Percent::from_number(&n)
                    .filter(|p| p.within(9999, 2))
                    .ok_or_else(|| {
                        ApiError::invalid(
                            "min_discount_percent",
                            "`min_discount_percent` must be a number from 0 to 99.99",
                        )
                    })?;
                options.min_discount = Some(percent);
            }
            Some(_) => {
                return Err(ApiError::invalid(
                    "min_discount_percent",
                    "`min_discount_percent` must be a number from 0 to 99.99",
                ));
            }
        }
        match extra.remove("zdr") {
            None | Some(Value::Null) => {}
            Some(Value::Bool(b)) => options.zdr = b,
            Some(_) => return Err(ApiError::invalid("zdr", "`zdr` must be a boolean")),
        }
        Ok(options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<RoutingOptions, ApiError> {
        let mut m = Map::new();
        m.insert("min_discount_percent".into(), v);
        RoutingOptions::take_from(&mut m)
    }

    #[test]
    fn range_is_exact() {
        assert!(parse(json!(0)).is_ok());
        assert!(parse(json!(99.99)).is_ok());
        assert!(parse(json!(100)).is_err());
        assert!(parse(json!(99.991)).is_err());
        assert!(parse(json!(-0.01)).is_err());
        assert!(parse(json!("5")).is_err());
    }

    #[test]
    fn discount_comparison_is_exact() {
        let ten = Percent {
            units: 10,
            scale: 0,
        };
        assert!(ten.is_met(1000, 900));
        assert!(!ten.is_met(1000, 901));
        // 2 against a list of 3 is 33.333...% off: meets 33.33%, not 33.34%.
        let floor = |units| Percent { units, scale: 2 };
        assert!(floor(3333).is_met(3, 2));
        assert!(!floor(3334).is_met(3, 2));
        assert!(floor(3333).is_met(10000, 6667));
    }
}
