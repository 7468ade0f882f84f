//! Path and method dispatch (unknown path 404, wrong method 405 with `Allow`, GP-68).

use crate::app::App;
use crate::messages;
use crate::reply::{self, Body, Envelope};
use crate::surfaces::{CHAT, COMPLETIONS, MESSAGES, RESPONSES};
use crate::{admin, health, inference};
use http::{Method, Response};
use hyper::body::Incoming;
use router_canonical::{ApiError, ErrorCode};
use std::sync::{Arc, OnceLock};
use uuid::Uuid;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Endpoint {
    ChatCompletions,
    Responses,
    Messages,
    CountTokens,
    Completions,
    Healthz,
    Readyz,
    AdminAccounts,
    AdminAccount,
    AdminAccountCredits,
    AdminApiKeys,
    AdminApiKey,
    AdminRequest,
}

impl Endpoint {
    fn methods(self) -> &'static [Method] {
        match self {
            Endpoint::ChatCompletions
            | Endpoint::Responses
            | Endpoint::Messages
            | Endpoint::CountTokens
            | Endpoint::Completions
            | Endpoint::AdminAccounts
            | Endpoint::AdminAccountCredits
            | Endpoint::AdminApiKeys => &[Method::POST],
            Endpoint::Healthz
            | Endpoint::Readyz
            | Endpoint::AdminAccount
            | Endpoint::AdminRequest => &[Method::GET],
            Endpoint::AdminApiKey => &[Method::GET, Method::PATCH, Method::DELETE],
        }
    }

    /// The error envelope of the endpoint's protocol.
    fn envelope(self) -> Envelope {
        match self {
            Endpoint::Messages | Endpoint::CountTokens => Envelope::Messages,
            _ => Envelope::OpenAi,
        }
    }
}

fn table() -> &'static matchit::Router<Endpoint> {
    static TABLE: OnceLock<matchit::Router<Endpoint>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut router = matchit::Router::new();
        let entries = [
            ("/v1/chat/completions", Endpoint::ChatCompletions),
            ("/v1/responses", Endpoint::Responses),
            ("/v1/messages", Endpoint::Messages),
            ("/v1/messages/count_tokens", Endpoint::CountTokens),
            ("/v1/completions", Endpoint::Completions),
            ("/healthz", Endpoint::Healthz),
            ("/readyz", Endpoint::Readyz),
            ("/admin/accounts", Endpoint::AdminAccounts),
            ("/admin/accounts/{id}", Endpoint::AdminAccount),
            (
                "/admin/accounts/{id}/credits",
                Endpoint::AdminAccountCredits,
            ),
            ("/admin/api-keys", Endpoint::AdminApiKeys),
            ("/admin/api-keys/{id}", Endpoint::AdminApiKey),
            ("/admin/requests/{id}", Endpoint::AdminRequest),
        ];
        for (path, endpoint) in entries {
            // The table is static: an insert error is a programming error caught by tests.
            if let Err(e) = router.insert(path, endpoint) {
                tracing::error!(path, error = %e, "invalid route table entry");
            }
        }
        router
    })
}

pub async fn dispatch(app: Arc<App>, request: http::Request<Incoming>) -> Response<Body> {
    let request_id = Uuid::now_v7();
    let id_text = request_id.to_string();
    let path = request.uri().path();
    let Ok(matched) = table().at(path) else {
        let error = ApiError::new(ErrorCode::NotFound, format!("No endpoint at `{path}`."));
        return reply::error(Envelope::OpenAi, &error, &id_text);
    };
    let endpoint = *matched.value;
    let param = matched.params.get("id").map(str::to_owned);
    if !endpoint.methods().contains(request.method()) {
        let error = ApiError::new(
            ErrorCode::MethodNotAllowed,
            format!("`{}` is not allowed on `{path}`.", request.method()),
        );
        let mut response = reply::error(endpoint.envelope(), &error, &id_text);
        let allow = endpoint
            .methods()
            .iter()
            .map(Method::as_str)
            .collect::<Vec<_>>()
            .join(", ");
        if let Ok(value) = http::HeaderValue::from_str(&allow) {
            response.headers_mut().insert(http::header::ALLOW, value);
        }
        return response;
    }
    match endpoint {
        Endpoint::ChatCompletions => inference::handle(&CHAT, app, request, request_id).await,
        Endpoint::Responses => inference::handle(&RESPONSES, app, request, request_id).await,
        Endpoint::Messages => inference::handle(&MESSAGES, app, request, request_id).await,
        Endpoint::CountTokens => messages::handle_count_tokens(app, request, request_id).await,
        Endpoint::Completions => inference::handle(&COMPLETIONS, app, request, request_id).await,
        Endpoint::Healthz => health::healthz(&id_text),
        Endpoint::Readyz => health::readyz(&app, &id_text).await,
        admin_endpoint => {
            let result = async {
                admin::authorize(&app, request.headers())?;
                let id = param.as_deref();
                match admin_endpoint {
                    Endpoint::AdminAccounts => admin::create_account(&app, request, &id_text).await,
                    Endpoint::AdminAccount => admin::get_account(&app, id, &id_text).await,
                    Endpoint::AdminAccountCredits => {
                        admin::grant_credits(&app, request, id, &id_text).await
                    }
                    Endpoint::AdminApiKeys => admin::create_api_key(&app, request, &id_text).await,
                    Endpoint::AdminApiKey if request.method() == Method::GET => {
                        admin::get_api_key(&app, id, &id_text).await
                    }
                    Endpoint::AdminApiKey if request.method() == Method::PATCH => {
                        admin::update_api_key(&app, request, id, &id_text).await
                    }
                    Endpoint::AdminApiKey => admin::delete_api_key(&app, id, &id_text).await,
                    _ => admin::get_request(&app, id, &id_text).await,
                }
            }
            .await;
            result.unwrap_or_else(|e| reply::error(Envelope::OpenAi, &e, &id_text))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_builds_and_matches() {
        assert_eq!(
            *table().at("/v1/chat/completions").unwrap().value,
            Endpoint::ChatCompletions
        );
        let m = table().at("/admin/accounts/abc/credits").unwrap();
        assert_eq!(*m.value, Endpoint::AdminAccountCredits);
        assert_eq!(m.params.get("id"), Some("abc"));
        assert!(table().at("/v1/files").is_err());
    }
}
