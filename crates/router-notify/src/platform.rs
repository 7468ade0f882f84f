//! The platforms a channel delivers on: the one list, spelled once.
//!
//! The database and the JSON bodies carry a platform as its lowercase name
//! ([`Platform::as_str`], [`Platform::parse`]); everything else matches on
//! the enum, so a new platform is a compile error in each place that must
//! learn it (its rendering in `report.rs`, its transport in `deliver.rs`,
//! its masking here, its provisioning in `channels.rs`).

use router_core::store::StoreError;
use router_store::channels::ChannelRow;
use std::fmt;

/// Where a channel's messages go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Platform {
    /// The account's verified address, over SMTP; connected by the account
    /// holder.
    Email,
    /// A Slack incoming webhook; provisioned by the operator.
    Slack,
    /// A Discord webhook; provisioned by the operator.
    Discord,
    /// A Telegram chat through the Bot API; provisioned by the operator.
    Telegram,
}

impl Platform {
    /// Every platform, in the order lists name them.
    pub const ALL: [Platform; 4] = [
        Platform::Email,
        Platform::Slack,
        Platform::Discord,
        Platform::Telegram,
    ];

    /// The platforms the operator provisions (GP-17): all but email.
    pub const EXTERNAL: [Platform; 3] = [Platform::Slack, Platform::Discord, Platform::Telegram];

    /// The name in the database and in JSON.
    pub const fn as_str(self) -> &'static str {
        match self {
            Platform::Email => "email",
            Platform::Slack => "slack",
            Platform::Discord => "discord",
            Platform::Telegram => "telegram",
        }
    }

    /// The platform of a name; `None` for anything else.
    pub fn parse(text: &str) -> Option<Platform> {
        Platform::ALL.into_iter().find(|p| p.as_str() == text)
    }

    /// A stored channel's platform: the database holds its name (and a
    /// check keeps it one of [`Platform::ALL`]).
    pub fn of(channel: &ChannelRow) -> Result<Platform, StoreError> {
        Platform::parse(&channel.platform).ok_or_else(|| {
            StoreError::Query(format!(
                "channel {} has an unknown platform `{}`",
                channel.id, channel.platform
            ))
        })
    }

    /// Whether the operator provisions it (rather than the account holder).
    pub fn is_external(self) -> bool {
        Platform::EXTERNAL.contains(&self)
    }

    /// A destination as a client may see it: an email address masked, a
    /// webhook URL only its host, a chat id its last digits.
    pub fn mask(self, destination: &str) -> String {
        match self {
            Platform::Email => match destination.split_once('@') {
                Some((local, domain)) => {
                    let first: String = local.chars().take(1).collect();
                    format!("{first}***@{domain}")
                }
                None => "***".to_owned(),
            },
            Platform::Telegram => {
                let tail: String = destination
                    .chars()
                    .rev()
                    .take(4)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect();
                format!("chat …{tail}")
            }
            // Slack and Discord webhook URLs carry their token in the path.
            Platform::Slack | Platform::Discord => url::Url::parse(destination)
                .ok()
                .and_then(|u| u.host_str().map(|h| format!("{}://{h}/…", u.scheme())))
                .unwrap_or_else(|| "***".to_owned()),
        }
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for Platform {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// `slack, discord or telegram`: platforms named in a message.
pub(crate) fn listing(platforms: &[Platform]) -> String {
    match platforms {
        [] => String::new(),
        [one] => one.as_str().to_owned(),
        [init @ .., last] => {
            let init: Vec<&str> = init.iter().map(|p| p.as_str()).collect();
            format!("{} or {last}", init.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for platform in Platform::ALL {
            assert_eq!(Platform::parse(platform.as_str()), Some(platform));
            assert_eq!(platform.to_string(), platform.as_str());
        }
        assert_eq!(Platform::parse("Slack"), None);
        assert_eq!(Platform::parse("sms"), None);
        assert!(!Platform::Email.is_external());
        assert!(Platform::EXTERNAL.iter().all(|p| p.is_external()));
        assert_eq!(listing(&Platform::EXTERNAL), "slack, discord or telegram");
    }

    #[test]
    fn destinations_are_masked() {
        assert_eq!(
            Platform::Email.mask("alice@example.com"),
            "a***@example.com"
        );
        let hook = "https://hooks.slack.com/services/T000/B000/SECRETSECRET";
        assert_eq!(Platform::Slack.mask(hook), "https://hooks.slack.com/…");
        assert_eq!(Platform::Telegram.mask("-1001234567890"), "chat …7890");
    }
}
