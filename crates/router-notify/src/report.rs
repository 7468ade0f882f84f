//! Usage reports: the previous complete UTC period of a frequency, the
//! account's usage in it (from the ledger, `router_store::channels::usage`),
//! and its rendering per platform within each platform's limits. A report
//! that cannot fit is refused whole (`report_unavailable`), never cut.

use crate::platform::Platform;
use chrono::{DateTime, Datelike, Duration, NaiveDate, TimeZone, Utc};
use router_store::channels::UsageLine;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// A digest frequency (GP-13).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frequency {
    Off,
    Daily,
    Weekly,
    Monthly,
}

impl Frequency {
    pub const ALL: [Frequency; 4] = [
        Frequency::Off,
        Frequency::Daily,
        Frequency::Weekly,
        Frequency::Monthly,
    ];

    /// The name in the database and in JSON.
    pub const fn as_str(self) -> &'static str {
        match self {
            Frequency::Off => "off",
            Frequency::Daily => "daily",
            Frequency::Weekly => "weekly",
            Frequency::Monthly => "monthly",
        }
    }

    pub fn parse(text: &str) -> Option<Frequency> {
        Frequency::ALL.into_iter().find(|f| f.as_str() == text)
    }

    /// The previous complete UTC period at `now`: yesterday, the previous
    /// ISO week (Monday to Monday) or the previous calendar month; `off`
    /// reports the previous day (M-14, GP-13).
    pub fn previous_period(self, now: DateTime<Utc>) -> Period {
        let today = now.date_naive();
        let (start, end) = match self {
            Frequency::Off | Frequency::Daily => (today - Duration::days(1), today),
            Frequency::Weekly => {
                let monday =
                    today - Duration::days(i64::from(today.weekday().num_days_from_monday()));
                (monday - Duration::days(7), monday)
            }
            Frequency::Monthly => {
                let first = first_of_month(today.year(), today.month());
                let previous = if today.month() == 1 {
                    first_of_month(today.year() - 1, 12)
                } else {
                    first_of_month(today.year(), today.month() - 1)
                };
                (previous, first)
            }
        };
        Period {
            start: midnight(start),
            end: midnight(end),
        }
    }

    /// The period before `period`, of the same frequency (the comparison).
    pub fn period_before(self, period: &Period) -> Period {
        self.previous_period(period.start)
    }
}

fn first_of_month(year: i32, month: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(year, month, 1).unwrap_or_default()
}

fn midnight(date: NaiveDate) -> DateTime<Utc> {
    Utc.from_utc_datetime(&date.and_hms_opt(0, 0, 0).unwrap_or_default())
}

/// `[start, end)`, UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Period {
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
}

impl Period {
    pub fn start_text(&self) -> String {
        self.start
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    }
    pub fn end_text(&self) -> String {
        self.end.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    }
}

/// Exact US dollars from nano-USD: `$1.234567891`, at least two decimals,
/// no rounding.
pub fn usd(nano: i64) -> String {
    let sign = if nano < 0 { "-" } else { "" };
    let abs = nano.unsigned_abs();
    let dollars = abs / 1_000_000_000;
    let mut fraction = format!("{:09}", abs % 1_000_000_000);
    while fraction.len() > 2 && fraction.ends_with('0') {
        fraction.pop();
    }
    format!("{sign}${dollars}.{fraction}")
}

/// One report: the period's totals, by model and by key, and the period
/// before for comparison.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub period: Period,
    pub requests: i64,
    pub spend_nano: i64,
    pub by_model: Vec<(String, i64, i64)>,
    pub by_key: Vec<(String, i64, i64)>,
    pub previous_requests: i64,
    pub previous_spend_nano: i64,
}

impl Report {
    pub fn new(period: Period, lines: &[UsageLine], previous: &[UsageLine]) -> Report {
        let mut by_model: BTreeMap<String, (i64, i64)> = BTreeMap::new();
        let mut by_key: BTreeMap<String, (i64, i64)> = BTreeMap::new();
        for line in lines {
            let m = by_model.entry(line.model.clone()).or_default();
            m.0 += line.requests;
            m.1 += line.spend_nano;
            let k = by_key.entry(format!("{}…", line.key_prefix)).or_default();
            k.0 += line.requests;
            k.1 += line.spend_nano;
        }
        let sorted = |map: BTreeMap<String, (i64, i64)>| {
            let mut v: Vec<_> = map.into_iter().map(|(n, (r, s))| (n, r, s)).collect();
            v.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
            v
        };
        Report {
            period,
            requests: lines.iter().map(|l| l.requests).sum(),
            spend_nano: lines.iter().map(|l| l.spend_nano).sum(),
            by_model: sorted(by_model),
            by_key: sorted(by_key),
            previous_requests: previous.iter().map(|l| l.requests).sum(),
            previous_spend_nano: previous.iter().map(|l| l.spend_nano).sum(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.requests == 0
    }

    fn title(&self) -> String {
        format!(
            "Router usage {} to {}",
            self.period.start.format("%Y-%m-%d %H:%M UTC"),
            self.period.end.format("%Y-%m-%d %H:%M UTC")
        )
    }

    fn comparison(&self) -> String {
        let delta = self.spend_nano - self.previous_spend_nano;
        format!(
            "Previous period: {} requests, {} ({}{})",
            self.previous_requests,
            usd(self.previous_spend_nano),
            if delta >= 0 { "+" } else { "" },
            usd(delta)
        )
    }

    fn summary(&self) -> String {
        format!("{} requests, {} spent", self.requests, usd(self.spend_nano))
    }
}

/// A message rendered for one platform.
#[derive(Debug, Clone)]
pub enum Rendered {
    Email {
        subject: String,
        text: String,
        html: String,
    },
    /// The JSON body for Slack, Discord or Telegram (without `chat_id`).
    Json(Value),
}

/// The report does not fit the platform's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLarge;

/// Slack: ≤ 50 blocks, ≤ 3000 characters of section text, ≤ 150 of a header.
const SLACK_BLOCKS: usize = 50;
const SLACK_SECTION: usize = 3000;
const SLACK_HEADER: usize = 150;
/// Discord embeds: description ≤ 4096, ≤ 25 fields, field value ≤ 1024,
/// title ≤ 256, and ≤ 6000 characters in all.
const DISCORD_DESCRIPTION: usize = 4096;
const DISCORD_FIELDS: usize = 25;
const DISCORD_FIELD_VALUE: usize = 1024;
const DISCORD_TITLE: usize = 256;
const DISCORD_TOTAL: usize = 6000;
/// Telegram `sendMessage`: ≤ 4096 characters after entity parsing.
const TELEGRAM_TEXT: usize = 4096;
/// An email digest stays under 1 MiB.
const EMAIL_BYTES: usize = 1024 * 1024;

fn chars(text: &str) -> usize {
    text.chars().count()
}

fn table(rows: &[(String, i64, i64)]) -> String {
    let mut out = String::new();
    for (name, requests, spend) in rows {
        let _ = writeln!(out, "{name}: {requests} requests, {}", usd(*spend));
    }
    out
}

fn escape_html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Slack mrkdwn escapes `&`, `<` and `>`.
fn escape_slack(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The report as `platform` shows it, or [`TooLarge`] when it cannot fit.
pub fn render(report: &Report, platform: Platform) -> Result<Rendered, TooLarge> {
    let title = report.title();
    match platform {
        Platform::Email => {
            let text = format!(
                "{title}\n\n{}\n{}\n\nBy model\n{}\nBy key\n{}",
                report.summary(),
                report.comparison(),
                table(&report.by_model),
                table(&report.by_key)
            );
            let rows = |rows: &[(String, i64, i64)]| {
                rows.iter()
                    .map(|(n, r, s)| {
                        format!(
                            "<tr><td>{}</td><td>{r}</td><td>{}</td></tr>",
                            escape_html(n),
                            usd(*s)
                        )
                    })
                    .collect::<String>()
            };
            let html = format!(
                "<html><body><h1>{}</h1><p>{}</p><p>{}</p>\
                 <h2>By model</h2><table><tr><th>Model</th><th>Requests</th><th>Spend</th></tr>{}</table>\
                 <h2>By key</h2><table><tr><th>Key</th><th>Requests</th><th>Spend</th></tr>{}</table>\
                 </body></html>",
                escape_html(&title),
                escape_html(&report.summary()),
                escape_html(&report.comparison()),
                rows(&report.by_model),
                rows(&report.by_key)
            );
            if text.len() + html.len() > EMAIL_BYTES {
                return Err(TooLarge);
            }
            Ok(Rendered::Email {
                subject: title,
                text,
                html,
            })
        }
        Platform::Slack => {
            let mut blocks = vec![
                json!({"type": "header", "text": {"type": "plain_text", "text": title}}),
                json!({"type": "section", "text": {"type": "mrkdwn", "text": format!("*{}*\n{}", escape_slack(&report.summary()), escape_slack(&report.comparison()))}}),
            ];
            for (heading, rows) in [("By model", &report.by_model), ("By key", &report.by_key)] {
                let text = format!("*{heading}*\n{}", escape_slack(&table(rows)));
                if chars(&text) > SLACK_SECTION {
                    return Err(TooLarge);
                }
                blocks.push(json!({"type": "section", "text": {"type": "mrkdwn", "text": text}}));
            }
            if chars(&title) > SLACK_HEADER || blocks.len() > SLACK_BLOCKS {
                return Err(TooLarge);
            }
            Ok(Rendered::Json(json!({
                "text": format!("{title}: {}", report.summary()),
                "blocks": blocks,
            })))
        }
        Platform::Discord => {
            let description = format!("**{}**\n{}", report.summary(), report.comparison());
            let mut fields = Vec::new();
            let mut total = chars(&title) + chars(&description);
            for (heading, rows) in [("By model", &report.by_model), ("By key", &report.by_key)] {
                let value = table(rows);
                let value = if value.is_empty() {
                    "-".to_owned()
                } else {
                    value
                };
                if chars(&value) > DISCORD_FIELD_VALUE {
                    return Err(TooLarge);
                }
                total += chars(heading) + chars(&value);
                fields.push(json!({"name": heading, "value": value, "inline": false}));
            }
            if chars(&title) > DISCORD_TITLE
                || chars(&description) > DISCORD_DESCRIPTION
                || fields.len() > DISCORD_FIELDS
                || total > DISCORD_TOTAL
            {
                return Err(TooLarge);
            }
            Ok(Rendered::Json(json!({
                "embeds": [{
                    "title": title,
                    "description": description,
                    "fields": fields,
                    "timestamp": report.period.end_text(),
                }],
            })))
        }
        Platform::Telegram => {
            // Telegram HTML: the limit counts the text after entity parsing,
            // i.e. without tags and with entities as one character.
            let visible = format!(
                "{title}\n{}\n{}\n\nBy model\n{}\nBy key\n{}",
                report.summary(),
                report.comparison(),
                table(&report.by_model),
                table(&report.by_key)
            );
            if chars(&visible) > TELEGRAM_TEXT {
                return Err(TooLarge);
            }
            let text = format!(
                "<b>{}</b>\n{}\n{}\n\n<b>By model</b>\n{}\n<b>By key</b>\n{}",
                escape_html(&title),
                escape_html(&report.summary()),
                escape_html(&report.comparison()),
                escape_html(&table(&report.by_model)),
                escape_html(&table(&report.by_key))
            );
            Ok(Rendered::Json(json!({"text": text, "parse_mode": "HTML"})))
        }
    }
}

/// An event notification for one platform: a title and a line of detail.
pub fn render_event(platform: Platform, title: &str, detail: &str) -> Rendered {
    match platform {
        Platform::Email => Rendered::Email {
            subject: title.to_owned(),
            text: format!("{title}\n\n{detail}\n"),
            html: format!(
                "<html><body><h1>{}</h1><p>{}</p></body></html>",
                escape_html(title),
                escape_html(detail)
            ),
        },
        Platform::Slack => Rendered::Json(json!({
            "text": format!("{title}: {detail}"),
            "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": format!("*{}*\n{}", escape_slack(title), escape_slack(detail))}}],
        })),
        Platform::Discord => {
            Rendered::Json(json!({"embeds": [{"title": title, "description": detail}]}))
        }
        Platform::Telegram => Rendered::Json(json!({
            "text": format!("<b>{}</b>\n{}", escape_html(title), escape_html(detail)),
            "parse_mode": "HTML",
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .unwrap()
            .with_timezone(&Utc)
    }

    #[test]
    fn periods_are_the_previous_complete_utc_period() {
        // 2026-11-26 is a Thursday.
        let now = at("2026-11-26T10:00:00Z");
        let p = Frequency::Daily.previous_period(now);
        assert_eq!(
            (p.start_text(), p.end_text()),
            ("2026-11-25T00:00:00Z".into(), "2026-11-26T00:00:00Z".into())
        );
        assert_eq!(
            Frequency::Off.previous_period(now),
            p,
            "GP-13: off reports the previous day"
        );
        let w = Frequency::Weekly.previous_period(now);
        assert_eq!(
            (w.start_text(), w.end_text()),
            ("2026-11-16T00:00:00Z".into(), "2026-11-23T00:00:00Z".into())
        );
        let m = Frequency::Monthly.previous_period(at("2026-01-03T00:00:00Z"));
        assert_eq!(
            (m.start_text(), m.end_text()),
            ("2025-12-01T00:00:00Z".into(), "2026-01-01T00:00:00Z".into())
        );
        assert_eq!(
            Frequency::Monthly.period_before(&m).start_text(),
            "2025-11-01T00:00:00Z"
        );
        // At exactly midnight the day just ended is complete.
        let d = Frequency::Daily.previous_period(at("2026-11-26T00:00:00Z"));
        assert_eq!(d.end_text(), "2026-11-26T00:00:00Z");
    }

    #[test]
    fn usd_is_exact() {
        assert_eq!(usd(0), "$0.00");
        assert_eq!(usd(1), "$0.000000001");
        assert_eq!(usd(1_500_000_000), "$1.50");
        assert_eq!(usd(-2_000_000_001), "-$2.000000001");
    }

    fn line(model: &str, spend: i64) -> UsageLine {
        UsageLine {
            model: model.to_owned(),
            api_key_id: uuid::Uuid::nil(),
            key_prefix: "rk_live_ab".to_owned(),
            requests: 1,
            spend_nano: spend,
        }
    }

    #[test]
    fn a_report_that_cannot_fit_is_refused_not_cut() {
        let period = Frequency::Daily.previous_period(Utc::now());
        let small = Report::new(period, &[line("m", 5)], &[]);
        for platform in Platform::ALL {
            assert!(render(&small, platform).is_ok(), "{platform}");
        }
        let many: Vec<UsageLine> = (0..400)
            .map(|i| line(&format!("vendor/model-{i:04}"), i))
            .collect();
        let big = Report::new(period, &many, &[]);
        for platform in Platform::EXTERNAL {
            assert_eq!(render(&big, platform).err(), Some(TooLarge), "{platform}");
        }
        assert!(render(&big, Platform::Email).is_ok());
    }
}
