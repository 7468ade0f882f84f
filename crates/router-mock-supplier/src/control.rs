//! Control endpoints under `/_mock/`, for scripting a mock supplier running
//! in another process (demos, benchmarks, Python tests). They are not
//! recorded as calls.
//!
//! | Method and path        | Body                                   | Effect                       |
//! |------------------------|----------------------------------------|------------------------------|
//! | `POST /_mock/scripts`  | `{"model": "m"?, "script": {...}}`     | enqueue (per model if given) |
//! | `PUT /_mock/default`   | `{"script": {...}}` or a bare script   | set the default script       |
//! | `GET /_mock/calls`     | none                                   | `{"calls": [{path, headers, body}]}` |
//! | `POST /_mock/reset`    | none                                   | clear queues and calls       |
//! | `PUT /_mock/video-plan`| `{"model": "m"?, "plan": {"kind": ...}}` | what new video jobs do     |
//! | `GET /_mock/videos`    | none                                   | `{submissions, polls, downloads, tasks}` |
//!
//! Successful changes answer `{"ok": true}`; a body that does not parse gets
//! `400` with `{"error": {"message": ...}}`.

use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::playbook::Playbook;
use crate::response_body::{self, ResponseBody};
use crate::response_body::{error_response, respond};
use crate::script::Script;

/// Path prefix of every control endpoint.
pub(crate) const PREFIX: &str = "/_mock/";

/// Body of `POST /_mock/scripts`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptPush {
    #[serde(default)]
    model: Option<String>,
    script: Script,
}

/// Body of `PUT /_mock/video-plan`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanPush {
    #[serde(default)]
    model: Option<String>,
    plan: crate::videos_endpoint::VideoPlan,
}

/// Reads the body of `PUT /_mock/default`: `{"script": {...}}` or a bare
/// script. Not an untagged enum, so that errors name the bad field.
fn parse_default(body: &[u8]) -> Result<Script, serde_json::Error> {
    let mut value: Value = serde_json::from_slice(body)?;
    match value.get_mut("script") {
        Some(script) => serde_json::from_value(script.take()),
        None => serde_json::from_value(value),
    }
}

/// Serves one control request.
pub(crate) async fn serve(
    request: Request<Incoming>,
    playbook: &Playbook,
) -> Response<ResponseBody> {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let endpoint = path.strip_prefix(PREFIX).unwrap_or_default();
    let allowed = match endpoint {
        "scripts" | "reset" => Method::POST,
        "default" => Method::PUT,
        "calls" | "videos" => Method::GET,
        "video-plan" => Method::PUT,
        _ => {
            return error_response(
                StatusCode::NOT_FOUND,
                &format!("no control endpoint at {path}"),
            );
        }
    };
    if method != allowed {
        return error_response(
            StatusCode::METHOD_NOT_ALLOWED,
            &format!("{path} takes {allowed}"),
        );
    }
    let body = match request.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(error) => {
            return error_response(
                StatusCode::BAD_REQUEST,
                &format!("could not read the request body: {error}"),
            );
        }
    };
    match endpoint {
        "scripts" => match serde_json::from_slice::<ScriptPush>(&body) {
            Ok(ScriptPush {
                model: Some(model),
                script,
            }) => {
                playbook.enqueue_for(&model, script);
                ok()
            }
            Ok(ScriptPush {
                model: None,
                script,
            }) => {
                playbook.enqueue(script);
                ok()
            }
            Err(error) => bad_body(&error),
        },
        "default" => match parse_default(&body) {
            Ok(script) => {
                playbook.set_default(script);
                ok()
            }
            Err(error) => bad_body(&error),
        },
        "video-plan" => match serde_json::from_slice::<PlanPush>(&body) {
            Ok(push) => {
                playbook.videos.set_plan(push.model.as_deref(), push.plan);
                ok()
            }
            Err(error) => bad_body(&error),
        },
        "videos" => json_response(&json!(playbook.videos.counts())),
        "calls" => {
            let calls: Vec<Value> = playbook
                .calls()
                .iter()
                .map(|call| call.to_control_json())
                .collect();
            json_response(&json!({ "calls": calls }))
        }
        _ => {
            playbook.reset();
            ok()
        }
    }
}

fn ok() -> Response<ResponseBody> {
    json_response(&json!({ "ok": true }))
}

fn bad_body(error: &serde_json::Error) -> Response<ResponseBody> {
    error_response(
        StatusCode::BAD_REQUEST,
        &format!("invalid control body: {error}"),
    )
}

fn json_response(value: &Value) -> Response<ResponseBody> {
    respond(
        StatusCode::OK,
        "application/json",
        response_body::full(value.to_string()),
    )
}
