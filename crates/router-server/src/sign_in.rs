//! Signing a person in and out of a browser session: a magic link by
//! email, redeemed once, and sign-out.
//!
//! 1. `POST /api/auth/magic-link {email}` always answers the same 202,
//!    whether an account has that address or not; for one that does, a
//!    single-use link valid for 15 minutes is emailed (at most one a minute).
//!    The address is looked up, the link written and the email sent after
//!    the answer, so its timing tells nothing either.
//! 2. The link opens `GET /api/auth/sign-in?token=…`, a page with one
//!    button; it does not spend the link, because mail scanners fetch every
//!    link they see. The button posts the token to `POST /api/auth/sign-in`,
//!    which must come from this router's origin (no signing a browser into
//!    someone else's account from another site), spends the link and sets
//!    the session cookie.
//! 3. `POST /api/auth/sign-out` ends the session and clears the cookie.

use crate::app::App;
use crate::body::Incoming;
use crate::body::{ADMIN_BODY_LIMIT, json_body, read_limited};
use crate::reply::{self, Body};
use crate::session::{self, Session};
use http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, HeaderValue, REFERRER_POLICY, SET_COOKIE,
    X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};
use http::{Response, StatusCode};
use router_canonical::ApiError;
use router_core::product_codes;
use router_dashboard::pages::SignInLink;
use router_dashboard::sign_in::SessionView;
use router_notify::mail::is_email_address;
use router_operator::sign_in::is_token;
use serde::Deserialize;
use std::sync::Arc;

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkRequest {
    #[schema(format = Email, max_length = 254)]
    email: String,
}

/// `POST /api/auth/magic-link`.
pub async fn request_link(
    app: Arc<App>,
    request: http::Request<Incoming>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let Some(mailer) = app.notify.mailer().cloned() else {
        return Err(ApiError::new(
            product_codes::EMAIL_UNAVAILABLE,
            "Email sign-in is not configured on this router (ROUTER_SMTP_URL).",
        ));
    };
    let LinkRequest { email } = json_body(request, ADMIN_BODY_LIMIT).await?;
    let email = email.trim();
    if !is_email_address(email) {
        return Err(ApiError::invalid("email", "Enter one email address."));
    }
    // The link is issued and sent after the answer: looking the address up
    // and writing a link takes database time only for a known address, so
    // doing it before the answer would tell an attacker which addresses
    // have accounts (issue 33 measured ~40 µs).
    let email = email.to_owned();
    let operator = app.operator.clone();
    let sign_in_url = app.public_base.join("/api/auth/sign-in");
    tokio::spawn(async move {
        router_dashboard::sign_in::send_link(&operator, &mailer, &sign_in_url, &email).await;
    });
    Ok(reply::json_value(
        StatusCode::ACCEPTED,
        &router_dashboard::sign_in::LINK_SENT,
        request_id,
    ))
}

/// `GET /api/auth/sign-in?token=…`: the page behind the emailed link. It
/// names the account the link signs into (someone who was sent a link for
/// another person's session sees whose it is) and spends nothing.
pub async fn sign_in_page(
    app: &App,
    request: &http::Request<Incoming>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let token = query_token(request.uri().query().unwrap_or_default());
    let action = app.public_base.join("/api/auth/sign-in");
    let token = token.filter(|t| is_token(t));
    let email = match &token {
        Some(token) => app
            .operator
            .sign_in_link_email(token)
            .await
            .map_err(ApiError::from)?,
        None => None,
    };
    let link = match (&token, &email) {
        (Some(token), Some(email)) => SignInLink::For { token, email },
        (Some(_), None) => SignInLink::Unknown,
        (None, _) => SignInLink::Incomplete,
    };
    let body = router_dashboard::pages::sign_in_page(&action, link);
    Ok(html(StatusCode::OK, body, request_id))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Redeem {
    token: String,
}

/// `POST /api/auth/sign-in`: spends the link and sets the session cookie.
/// Takes the page's form post or JSON `{token}`.
pub async fn redeem(
    app: &App,
    request: http::Request<Incoming>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    session::check_origin(&app.public_base, request.method(), request.headers())?;
    let is_form = request
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
    let token = if is_form {
        let (parts, body) = request.into_parts();
        let bytes = read_limited(&parts.headers, body, ADMIN_BODY_LIMIT).await?;
        query_token(&String::from_utf8_lossy(&bytes))
            .ok_or_else(|| ApiError::invalid("token", "The form carries no sign-in token."))?
    } else {
        json_body::<Redeem>(request, ADMIN_BODY_LIMIT).await?.token
    };
    let invalid = || {
        ApiError::new(
            product_codes::SIGN_IN_LINK_INVALID,
            "This sign-in link is unknown, already used or expired. Ask for a new one.",
        )
    };
    let session = app
        .operator
        .redeem_sign_in_link(&token)
        .await
        .map_err(ApiError::from)?
        .ok_or_else(invalid)?;
    let body = router_dashboard::pages::signed_in_page(&session.expires_at);
    let mut response = html(StatusCode::OK, body, request_id);
    set_cookie(
        &mut response,
        &session::set_cookie(&app.public_base, &session.token, app.operator.session_ttl()),
    );
    Ok(response)
}

/// `GET /api/auth/session`: who is signed in.
pub fn show(session: &Session, request_id: &str) -> Response<Body> {
    reply::json_value(StatusCode::OK, &SessionView::from(session), request_id)
}

pub async fn sign_out(
    app: &App,
    session: &Session,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    app.operator
        .sign_out(session.id)
        .await
        .map_err(ApiError::from)?;
    let mut response = reply::no_content(request_id);
    set_cookie(&mut response, &session::clear_cookie(&app.public_base));
    Ok(response)
}

fn set_cookie(response: &mut Response<Body>, cookie: &str) {
    if let Ok(value) = HeaderValue::from_str(cookie) {
        response.headers_mut().insert(SET_COOKIE, value);
    }
}

fn html(status: StatusCode, body: String, request_id: &str) -> Response<Body> {
    let mut response = Response::new(reply::full(body));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    // The pages hold a live token and a sign-in button: never framed
    // (clickjacking), never sniffed, scripts and other origins' content
    // refused, and the token in the URL never sent on as a Referer.
    headers.insert(
        CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    headers.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    reply::set_request_id(headers, request_id);
    response
}

/// The `token` of a query string or form body.
fn query_token(query: &str) -> Option<String> {
    url::form_urlencoded::parse(query.as_bytes())
        .find(|(name, _)| name == "token")
        .map(|(_, value)| value.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_read_from_queries() {
        let t = "ab".repeat(32);
        assert_eq!(query_token(&format!("x=1&token={t}")), Some(t.clone()));
        assert_eq!(query_token("x=1"), None);
    }
}
