//! The pages and their assets, embedded in the binary: no network at run
//! time, no build step. Every page is the same HTML shell; the JavaScript
//! modules read the path and draw the page from the JSON endpoints. The
//! sign-in pages a mailed link opens are plain HTML forms that work
//! without JavaScript, enhanced by the same modules when it runs.

/// The dashboard's pages under `/account/`; `/` is the start (sign in, or
/// usage once signed in).
pub const PAGES: [&str; 6] = [
    "sign-in",
    "usage",
    "requests",
    "keys",
    "data-protection",
    "digests",
];

/// Where the assets are served: `{ASSETS}{name}`.
pub const ASSETS: &str = "/dashboard/assets/";

/// One embedded file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Asset {
    pub content_type: &'static str,
    pub body: &'static [u8],
}

const SHELL: &str = include_str!("../web/index.html");

/// The embedded assets by name.
const FILES: [(&str, Asset); 5] = [
    (
        "app.css",
        Asset {
            content_type: "text/css; charset=utf-8",
            body: include_bytes!("../web/app.css"),
        },
    ),
    (
        "app.js",
        Asset {
            content_type: "text/javascript; charset=utf-8",
            body: include_bytes!("../web/app.js"),
        },
    ),
    (
        "api.js",
        Asset {
            content_type: "text/javascript; charset=utf-8",
            body: include_bytes!("../web/api.js"),
        },
    ),
    (
        "pages.js",
        Asset {
            content_type: "text/javascript; charset=utf-8",
            body: include_bytes!("../web/pages.js"),
        },
    ),
    (
        "sign-in.js",
        Asset {
            content_type: "text/javascript; charset=utf-8",
            body: include_bytes!("../web/sign-in.js"),
        },
    ),
];

/// The asset called `name`, if any.
pub fn asset(name: &str) -> Option<Asset> {
    FILES
        .iter()
        .find(|(file, _)| *file == name)
        .map(|(_, asset)| *asset)
}

/// The page shell for `/` (`None`) or `/account/{page}`: the known pages,
/// and `requests/{id}` for one request. Anything else is no page.
pub fn shell(page: Option<&str>) -> Option<&'static str> {
    let known = match page {
        None => true,
        Some(page) => {
            PAGES.contains(&page)
                || page
                    .strip_prefix("requests/")
                    .is_some_and(|id| uuid::Uuid::parse_str(id).is_ok())
        }
    };
    known.then_some(SHELL)
}

/// The text of `s` safe inside HTML text and double-quoted attributes.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn document(title: &str, main: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title}</title><link rel=\"stylesheet\" href=\"{ASSETS}app.css\">\
         <script type=\"module\" src=\"{ASSETS}sign-in.js\"></script></head>\
         <body><header class=\"top\"><a class=\"brand\" href=\"/\">Router</a></header>\
         <main id=\"main\" class=\"narrow\">{main}</main></body></html>",
        title = escape(title),
    )
}

/// What the link behind a sign-in mail is, as its page shows it.
#[derive(Debug, Clone, Copy)]
pub enum SignInLink<'a> {
    /// A live link: the account it signs into (named on the page, so a
    /// person sent someone else's link sees whose it is) and its token.
    For { token: &'a str, email: &'a str },
    /// A well-formed token the store does not know: spent, expired or never issued.
    Unknown,
    /// No token, or not one the router issues.
    Incomplete,
}

/// The page a mailed link opens: the account it signs into and one button
/// that spends the link (a mail scanner's GET does not), or a note that the
/// link is incomplete, or unknown, spent or expired.
pub fn sign_in_page(action: &str, link: SignInLink<'_>) -> String {
    match link {
        SignInLink::For { token, email } => document(
            "Sign in to Router",
            &format!(
                "<h1>Sign in to Router</h1>\
                 <p>Sign in to Router as <strong>{email}</strong>. Press the button to finish \
                 signing in on this device.</p>\
                 <form id=\"redeem\" method=\"post\" action=\"{action}\">\
                 <input type=\"hidden\" name=\"token\" value=\"{token}\">\
                 <button type=\"submit\">Sign in to Router</button></form>\
                 <p id=\"status\" role=\"status\" aria-live=\"polite\"></p>",
                action = escape(action),
                token = escape(token),
                email = escape(email),
            ),
        ),
        SignInLink::Unknown => document(
            "Sign in to Router",
            "<h1>This sign-in link has expired or was already used</h1>\
             <p>This sign-in link is unknown, already used or expired. \
             <a href=\"/account/sign-in\">Ask for a new one</a>.</p>",
        ),
        SignInLink::Incomplete => document(
            "Sign in to Router",
            "<h1>This sign-in link is incomplete</h1>\
             <p>Copy the whole link from the email, or <a href=\"/account/sign-in\">ask for a new one</a>.</p>",
        ),
    }
}

/// The page after a link was spent: signed in, and where to go.
pub fn signed_in_page(expires_at: &str) -> String {
    document(
        "Signed in",
        &format!(
            "<h1>You are signed in</h1><p>Your session lasts until {}.</p>\
             <p><a class=\"button\" href=\"/account/usage\">Open your dashboard</a></p>",
            escape(expires_at)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_pages_have_the_shell() {
        assert!(shell(None).is_some());
        for page in PAGES {
            assert!(shell(Some(page)).is_some(), "{page}");
        }
        let id = uuid::Uuid::now_v7();
        assert!(shell(Some(&format!("requests/{id}"))).is_some());
        assert!(shell(Some("requests/nope")).is_none());
        assert!(shell(Some("admin")).is_none());
    }

    #[test]
    fn the_shell_loads_only_embedded_assets() {
        let shell = shell(None).unwrap();
        for (i, part) in shell.split("src=\"").skip(1).enumerate() {
            let src = part.split('"').next().unwrap();
            let name = src
                .strip_prefix(ASSETS)
                .unwrap_or_else(|| panic!("{i}: {src}"));
            assert!(asset(name).is_some(), "{src}");
        }
        for part in shell.split("href=\"").skip(1) {
            let href = part.split('"').next().unwrap();
            assert!(href.starts_with(['/', '#']), "{href} leaves the router");
        }
    }

    #[test]
    fn modules_import_only_embedded_modules() {
        for (name, asset) in FILES {
            let text = std::str::from_utf8(asset.body).unwrap();
            for line in text.lines().filter(|l| l.starts_with("import ")) {
                let from = line.rsplit(['"', '\'']).nth(1).unwrap();
                let file = from.trim_start_matches("./");
                assert!(asset_named(file), "{name} imports {from}");
            }
        }
    }

    fn asset_named(name: &str) -> bool {
        asset(name).is_some()
    }

    #[test]
    fn sign_in_pages_escape_what_they_show() {
        let page = sign_in_page(
            "https://r.example/api/auth/sign-in?a=\"b",
            SignInLink::For {
                token: "ab<c",
                email: "<b>@example.com",
            },
        );
        assert!(page.contains("value=\"ab&lt;c\""));
        assert!(page.contains("sign-in?a=&quot;b"));
        assert!(page.contains("as <strong>&lt;b&gt;@example.com</strong>"));
        assert!(sign_in_page("/x", SignInLink::Incomplete).contains("incomplete"));
        assert!(sign_in_page("/x", SignInLink::Unknown).contains("already used or expired"));
    }
}
