//! A client's Responses request, validated into the canonical model.
//!
//! Every rejection of a client request is a 400 `invalid_parameter` whose
//! `param` is the path of the offending field (`input[1].content[0].text`),
//! made here before any routing or network work. Shape errors come from
//! `serde_path_to_error`; value rules (ranges, conflicts, statelessness,
//! unsupported media and tools) are checked by hand below.
//!
//! # Input items in the canonical model
//!
//! * A string `input` is one user message (`content_was_string`).
//! * `instructions` is a leading [`Role::System`] message with string
//!   content. The encoder turns such a first message back into
//!   `instructions`, so the mapping round-trips; developer messages always
//!   stay input items.
//! * Message items of role `user`, `system` and `developer` are one message
//!   each. An *assistant turn* -- a run of consecutive assistant message,
//!   `function_call` and `reasoning` items -- is one assistant message whose
//!   parts keep the item order: text, [`ContentPart::ToolCall`] (the
//!   `call_id` is the id), [`ContentPart::Thinking`]. This is the shape Chat
//!   (`content` + `tool_calls`) and Messages (thinking, text, tool_use blocks)
//!   need. Its `content_was_string` is true when every message item of the
//!   turn had string content (or there was none, as for a Chat tool-call
//!   turn with `content: null`).
//! * A `function_call_output` is one [`Role::Tool`] message holding one
//!   [`ContentPart::ToolResult`].
//! * A `reasoning` item is a [`ContentPart::Thinking`] whose text is the
//!   summary parts joined by a blank line (or, when there is no summary, the
//!   raw `reasoning_text` parts) and whose signature is `encrypted_content`,
//!   the state a stateless conversation must replay. The item `id` is not
//!   kept: with `store: false` the API takes reasoning items without it (as
//!   OpenAI's own stateless client sends them).
//! * A `refusal` part of an assistant message is kept verbatim as a
//!   Responses [`ContentPart::Opaque`] part and makes the request
//!   native-only: only a Responses route carries it without loss.

use super::echo::{RequestEcho, ResponsesExtra};
use crate::convert::{
    NATIVE_ALLOWLIST, TOOL_NAMESPACES, ToolNamespaces, VERBOSITY, flat_name, namespace_group,
    thinking,
};
use crate::wire::request::{
    self as wire, ContentPart as WirePart, Input, InputItem, MessageContent, MessageItem,
    MessageRole, ResponsesRequest, TextFormat, ToolChoiceMode,
};
use router_canonical::BodyExtensions;
use router_canonical::parse::{self, OpenAiSampling, check_image_url, function_tool_choice};
use router_canonical::request::NativeFields;
use router_canonical::{
    ApiError, CacheControl, ContentPart, ImageSource, Message, Protocol, Reasoning, Request,
    ResponseFormat, Role, Sampling, Tool, ToolChoice,
};
use serde_json::{Map, Value};

/// Content-part types that carry media other than images.
const MEDIA_PARTS: [&str; 7] = [
    "input_file",
    "input_audio",
    "file",
    "audio",
    "video",
    "video_url",
    "document",
];

pub(crate) fn request(
    body: &[u8],
    extensions: &mut dyn BodyExtensions,
) -> Result<(Request, ResponsesExtra), ApiError> {
    let wire: ResponsesRequest = parse::request_body(body)?;
    let echo = RequestEcho::of(&wire);
    let (request, namespaces) = convert_request(wire, Endpoint::Responses, extensions)?;
    Ok((request, ResponsesExtra::new(namespaces, echo)))
}

/// A `POST /v1/responses/input_tokens` body: the create body's fields, read
/// the same way, with `input` optional (instructions and tools alone count
/// too); media cannot be estimated locally.
pub(crate) fn input_tokens(
    body: &[u8],
    extensions: &mut dyn BodyExtensions,
) -> Result<Request, ApiError> {
    let (request, _) = convert_request(
        parse::request_body(body)?,
        Endpoint::InputTokens,
        extensions,
    )?;
    if request.has_images() {
        return Err(ApiError::invalid(
            "input",
            "images cannot be counted by the local estimate: count the text alone",
        ));
    }
    Ok(request)
}

/// Which endpoint a body arrived on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Endpoint {
    Responses,
    InputTokens,
}

fn convert_request(
    wire: ResponsesRequest,
    endpoint: Endpoint,
    extensions: &mut dyn BodyExtensions,
) -> Result<(Request, ToolNamespaces), ApiError> {
    let ResponsesRequest {
        model,
        input,
        instructions,
        store,
        max_output_tokens,
        temperature,
        top_p,
        tools,
        tool_choice,
        parallel_tool_calls,
        reasoning,
        reasoning_effort,
        text,
        stream,
        user,
        safety_identifier,
        previous_response_id,
        conversation,
        background,
        prompt,
        mut extra,
    } = wire;
    // A gateway's own members first; the rest are judged as Responses'.
    extensions.take(&mut extra)?;

    let model = model.ok_or_else(|| ApiError::invalid("model", "`model` is required"))?;
    // CF-07: optional, `false` only. The gateway keeps nothing.
    if store == Some(true) {
        return Err(ApiError::invalid(
            "store",
            "`store` must be false: this gateway is stateless and stores no responses",
        ));
    }
    // C-11, GP-49: nothing is stored, so nothing can be referenced.
    if previous_response_id.is_some() {
        return Err(ApiError::invalid(
            "previous_response_id",
            "`previous_response_id` is not supported: this gateway is stateless; send the whole conversation in `input`",
        ));
    }
    if conversation.is_some() {
        return Err(ApiError::invalid(
            "conversation",
            "`conversation` is not supported: this gateway is stateless; send the whole conversation in `input`",
        ));
    }
    if prompt.is_some() {
        return Err(ApiError::invalid(
            "prompt",
            "stored prompt templates (`prompt`) are not supported: send `instructions` and `input` instead",
        ));
    }
    if background == Some(true) {
        return Err(ApiError::invalid(
            "background",
            "`background` must be false: background responses are stored, and this gateway is stateless",
        ));
    }
    let input = match (input, endpoint) {
        (Some(input), _) => input,
        (None, Endpoint::InputTokens) => Input::Seq(Vec::new()),
        (None, Endpoint::Responses) => {
            return Err(ApiError::invalid("input", "`input` is required"));
        }
    };
    if endpoint == Endpoint::Responses && matches!(&input, Input::Seq(items) if items.is_empty()) {
        return Err(ApiError::invalid(
            "input",
            "`input` must be a string or contain at least one item",
        ));
    }
    if max_output_tokens == Some(0) {
        return Err(ApiError::invalid(
            "max_output_tokens",
            "`max_output_tokens` must be an integer of at least 1",
        ));
    }

    let ranges = OpenAiSampling {
        temperature,
        top_p,
        ..OpenAiSampling::default()
    }
    .checked()?;
    let sampling = Sampling {
        max_output_tokens,
        ..ranges
    };
    let (nested_effort, summary) = match reasoning {
        Some(r) => (r.effort, r.summary.or(r.generate_summary)),
        None => (None, None),
    };
    let reasoning = Reasoning {
        effort: effort(reasoning_effort, nested_effort)?,
        thinking: None,
        summary,
    };

    let mut native_only = None;
    let mut messages = Vec::new();
    if let Some(instructions) = instructions {
        messages.push(Message::text(Role::System, instructions));
    }
    match input {
        Input::Text(text) => messages.push(Message::text(Role::User, text)),
        Input::Seq(items) => {
            let mut turn = Turn::default();
            for (i, item) in items.into_iter().enumerate() {
                input_item(
                    i,
                    item,
                    &mut turn,
                    &mut messages,
                    &mut native_only,
                    &*extensions,
                )?;
            }
            turn.flush(&mut messages);
        }
    }
    let mut namespaces = ToolNamespaces::default();
    let mut groups = Vec::new();
    let mut canonical_tools = Vec::new();
    for (i, t) in tools.unwrap_or_default().into_iter().enumerate() {
        if t.kind == "namespace" {
            namespace(i, t, &mut canonical_tools, &mut namespaces, &mut groups)?;
        } else {
            canonical_tools.push(tool(&format!("tools[{i}]"), t)?);
        }
    }
    // A flat name must not shadow another tool: the reply could not say
    // which one was called.
    let mut seen = std::collections::BTreeSet::new();
    if let Some(i) = canonical_tools
        .iter()
        .position(|t| !seen.insert(t.name.as_str()))
    {
        return Err(ApiError::invalid(
            "tools",
            format!(
                "two tools are named `{}` (a namespace's functions are known as `namespace__name`): rename one",
                canonical_tools[i].name
            ),
        ));
    }
    let tools = canonical_tools;
    let (response_format, verbosity) = match text {
        Some(text) => (
            text.format.map(convert_text_format).transpose()?,
            text.verbosity,
        ),
        None => (None, None),
    };

    let mut native = native_fields(extra, verbosity)?;
    if !groups.is_empty() {
        native
            .get_or_insert_with(|| NativeFields {
                protocol: Some(Protocol::Responses),
                fields: Map::new(),
                betas: Vec::new(),
            })
            .fields
            .insert(TOOL_NAMESPACES.to_owned(), Value::Array(groups));
    }
    let request = Request {
        model,
        messages,
        tools,
        tool_choice: tool_choice.map(convert_tool_choice).transpose()?,
        parallel_tool_calls,
        sampling,
        reasoning,
        response_format,
        stream: stream.unwrap_or(false),
        end_user: user.or(safety_identifier),
        native,
        inbound: Some(Protocol::Responses),
        native_only,
    };
    Ok((request, namespaces))
}

/// `reasoning_effort` is an alias of `reasoning.effort`; both are
/// allowed only when equal. Kept verbatim, never defaulted or clamped.
fn effort(alias: Option<String>, nested: Option<String>) -> Result<Option<String>, ApiError> {
    match (alias, nested) {
        (Some(a), Some(b)) if a != b => Err(ApiError::invalid(
            "reasoning_effort",
            format!(
                "`reasoning_effort` (\"{a}\") and `reasoning.effort` (\"{b}\") differ; send one, or the same value in both"
            ),
        )),
        (a, b) => Ok(b.or(a)),
    }
}

/// The assistant turn being assembled from consecutive assistant-side items.
#[derive(Debug, Default)]
struct Turn {
    parts: Vec<ContentPart>,
    open: bool,
    saw_message: bool,
    all_string: bool,
}

impl Turn {
    fn push(&mut self, parts: Vec<ContentPart>, message_was_string: Option<bool>) {
        if !self.open {
            *self = Turn {
                open: true,
                all_string: true,
                ..Turn::default()
            };
        }
        if let Some(was_string) = message_was_string {
            self.saw_message = true;
            self.all_string &= was_string;
        }
        self.parts.extend(parts);
    }

    fn flush(&mut self, messages: &mut Vec<Message>) {
        if !self.open {
            return;
        }
        let turn = std::mem::take(self);
        messages.push(Message {
            role: Role::Assistant,
            content: turn.parts,
            content_was_string: !turn.saw_message || turn.all_string,
            name: None,
        });
    }
}

fn input_item(
    i: usize,
    item: InputItem,
    turn: &mut Turn,
    messages: &mut Vec<Message>,
    native_only: &mut Option<String>,
    extensions: &dyn BodyExtensions,
) -> Result<(), ApiError> {
    let base = format!("input[{i}]");
    match item {
        InputItem::Message(m) => {
            let role = m.role;
            let (parts, was_string) = message_content(&base, m, native_only, extensions)?;
            if role == MessageRole::Assistant {
                turn.push(parts, Some(was_string));
            } else {
                turn.flush(messages);
                messages.push(Message {
                    role: match role {
                        MessageRole::System => Role::System,
                        MessageRole::Developer => Role::Developer,
                        MessageRole::User => Role::User,
                        MessageRole::Assistant => Role::Assistant,
                    },
                    content: parts,
                    content_was_string: was_string,
                    name: None,
                });
            }
        }
        InputItem::FunctionCall(call) => turn.push(
            vec![ContentPart::ToolCall {
                id: call.call_id,
                // A namespaced call is known by its flat name.
                name: match &call.namespace {
                    Some(namespace) => flat_name(namespace, &call.name),
                    None => call.name,
                },
                arguments: call.arguments,
            }],
            None,
        ),
        InputItem::Reasoning(item) => {
            let (text, signature) = thinking(item);
            turn.push(vec![ContentPart::Thinking { text, signature }], None);
        }
        InputItem::FunctionCallOutput(output) => {
            turn.flush(messages);
            let (content, was_string) = match output.output {
                MessageContent::Text(text) => (
                    vec![ContentPart::Text {
                        text,
                        cache_control: None,
                    }],
                    true,
                ),
                MessageContent::Seq(parts) => (
                    parts
                        .into_iter()
                        .enumerate()
                        .map(|(j, p)| {
                            tool_output_part(&format!("{base}.output[{j}]"), p, extensions)
                        })
                        .collect::<Result<Vec<_>, _>>()?,
                    false,
                ),
            };
            messages.push(Message {
                role: Role::Tool,
                content: vec![ContentPart::ToolResult {
                    tool_call_id: output.call_id,
                    content,
                    is_error: false,
                    cache_control: None,
                }],
                content_was_string: was_string,
                name: None,
            });
        }
        InputItem::Other(value) => {
            let kind = value
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("item_reference");
            return Err(if kind == "item_reference" {
                ApiError::invalid(
                    base,
                    "item references are not supported: this gateway is stateless; send the referenced items themselves (with the AI SDK, set the OpenAI provider option `store: false`)",
                )
            } else {
                ApiError::invalid(
                    format!("{base}.type"),
                    format!(
                        "input items of type `{kind}` are not supported: use message, function_call, function_call_output or reasoning items"
                    ),
                )
            });
        }
    }
    Ok(())
}

fn message_content(
    base: &str,
    m: MessageItem,
    native_only: &mut Option<String>,
    extensions: &dyn BodyExtensions,
) -> Result<(Vec<ContentPart>, bool), ApiError> {
    match m.content {
        MessageContent::Text(text) => Ok((
            vec![ContentPart::Text {
                text,
                cache_control: None,
            }],
            true,
        )),
        MessageContent::Seq(parts) => {
            let assistant = m.role == MessageRole::Assistant;
            let mut out = Vec::with_capacity(parts.len());
            for (j, part) in parts.into_iter().enumerate() {
                let path = format!("{base}.content[{j}]");
                out.push(match part {
                    WirePart::InputText(p) => text_part(p),
                    WirePart::OutputText(p) if assistant => text_part(p),
                    WirePart::Refusal(p) if assistant => {
                        native_only.get_or_insert(path);
                        refusal_part(p.refusal)
                    }
                    WirePart::InputImage(_) | WirePart::ImageUrl(_) | WirePart::Image(_)
                        if assistant =>
                    {
                        return Err(ApiError::invalid(
                            format!("{path}.type"),
                            "assistant messages cannot carry images",
                        ));
                    }
                    image @ (WirePart::InputImage(_)
                    | WirePart::ImageUrl(_)
                    | WirePart::Image(_)) => image_part(&path, image, extensions)?,
                    WirePart::OutputText(_) | WirePart::Refusal(_) => {
                        return Err(ApiError::invalid(
                            format!("{path}.type"),
                            "`output_text` and `refusal` parts belong to assistant messages",
                        ));
                    }
                    WirePart::Unknown(value) => return Err(unknown_part(&path, &value)),
                });
            }
            Ok((out, false))
        }
    }
}

fn tool_output_part(
    path: &str,
    part: WirePart,
    extensions: &dyn BodyExtensions,
) -> Result<ContentPart, ApiError> {
    match part {
        WirePart::InputText(p) => Ok(text_part(p)),
        image @ (WirePart::InputImage(_) | WirePart::ImageUrl(_) | WirePart::Image(_)) => {
            image_part(path, image, extensions)
        }
        WirePart::OutputText(_) | WirePart::Refusal(_) => Err(ApiError::invalid(
            format!("{path}.type"),
            "a function call output holds `input_text` and `input_image` parts",
        )),
        WirePart::Unknown(value) => Err(unknown_part(path, &value)),
    }
}

fn unknown_part(path: &str, value: &Value) -> ApiError {
    let kind = value.get("type").and_then(Value::as_str).unwrap_or("");
    let message = if MEDIA_PARTS.contains(&kind) {
        format!(
            "content parts of type `{kind}` are not supported: inference accepts text and image input only"
        )
    } else {
        format!(
            "unknown content part type `{kind}`: expected input_text, output_text, refusal or input_image"
        )
    };
    ApiError::invalid(format!("{path}.type"), message)
}

/// The `Opaque` form of a replayed refusal part.
pub(crate) fn refusal_part(refusal: String) -> ContentPart {
    let mut value = Map::new();
    value.insert("type".to_owned(), Value::String("refusal".to_owned()));
    value.insert("refusal".to_owned(), Value::String(refusal));
    ContentPart::Opaque {
        protocol: Protocol::Responses,
        value: Value::Object(value),
    }
}

fn cache_control(c: wire::CacheControl) -> CacheControl {
    CacheControl {
        kind: c.kind,
        ttl: c.ttl,
    }
}

fn text_part(p: wire::TextPart) -> ContentPart {
    ContentPart::Text {
        text: p.text,
        cache_control: p.cache_control.map(cache_control),
    }
}

/// An image part of any of the three accepted shapes.
fn image_part(
    path: &str,
    part: WirePart,
    extensions: &dyn BodyExtensions,
) -> Result<ContentPart, ApiError> {
    let p = match part {
        WirePart::InputImage(p) => p,
        WirePart::ImageUrl(p) => {
            check_image_url(
                &format!("{path}.image_url.url"),
                &p.image_url.url,
                extensions,
            )?;
            return Ok(ContentPart::Image {
                source: ImageSource::Url {
                    url: p.image_url.url,
                },
                detail: p.image_url.detail,
                cache_control: p.cache_control.map(cache_control),
            });
        }
        WirePart::Image(p) => {
            let source = match p.source {
                wire::ImageSource::Base64 { media_type, data } => {
                    parse::base64_image(path, media_type, data)?
                }
                wire::ImageSource::Url { url } => {
                    check_image_url(&format!("{path}.source.url"), &url, extensions)?;
                    ImageSource::Url { url }
                }
                wire::ImageSource::File { file_id } => ImageSource::Upload {
                    file_id,
                    param: format!("{path}.source.file_id"),
                },
            };
            return Ok(ContentPart::Image {
                source,
                detail: None,
                cache_control: p.cache_control.map(cache_control),
            });
        }
        // Callers pass image parts only.
        other => {
            return Err(ApiError::invalid(
                format!("{path}.type"),
                format!("expected an image part, got `{}`", other.kind()),
            ));
        }
    };
    let source = parse::input_image_source(path, p.image_url, p.file_id, extensions)?;
    Ok(ContentPart::Image {
        source,
        detail: p.detail,
        cache_control: p.cache_control.map(cache_control),
    })
}

/// Image URLs are `https:`, `http:`, or a base64 `data:` URL of one of the
/// four image types.
fn tool(base: &str, t: wire::ToolDefinition) -> Result<Tool, ApiError> {
    if t.kind != "function" {
        return Err(ApiError::invalid(
            format!("{base}.type"),
            format!(
                "tools of type `{}` are not supported: the router serves function tools only (and `namespace` groups of them), no hosted tools. In Codex, set `web_search = \"disabled\"` in config.toml",
                t.kind
            ),
        ));
    }
    let name = t.name.ok_or_else(|| {
        ApiError::invalid(format!("{base}.name"), "a function tool needs a `name`")
    })?;
    let parameters = match t.parameters {
        None | Some(Value::Null) => empty_object_schema(),
        Some(Value::Object(schema)) => Value::Object(schema),
        Some(_) => {
            return Err(ApiError::invalid(
                format!("{base}.parameters"),
                "`parameters` must be a JSON Schema object",
            ));
        }
    };
    Ok(Tool {
        name,
        description: t.description,
        parameters,
        strict: t.strict,
        cache_control: t.cache_control.map(cache_control),
    })
}

/// A `namespace` tool: its function tools, each known by its flat name
/// ([`flat_name`]) in the canonical request, recorded in `namespaces` (for
/// the reply) and in `groups` (for a Responses route, which gets the group
/// as sent).
fn namespace(
    i: usize,
    t: wire::ToolDefinition,
    tools: &mut Vec<Tool>,
    namespaces: &mut ToolNamespaces,
    groups: &mut Vec<Value>,
) -> Result<(), ApiError> {
    let base = format!("tools[{i}]");
    let name = t.name.filter(|n| !n.is_empty()).ok_or_else(|| {
        ApiError::invalid(format!("{base}.name"), "a namespace tool needs a `name`")
    })?;
    let members = t.tools.filter(|m| !m.is_empty()).ok_or_else(|| {
        ApiError::invalid(
            format!("{base}.tools"),
            "a namespace tool needs a non-empty `tools` array of function tools",
        )
    })?;
    let mut group = Vec::with_capacity(members.len());
    for (j, member) in members.into_iter().enumerate() {
        let mut function = tool(&format!("{base}.tools[{j}]"), member)?;
        let flat = flat_name(&name, &function.name);
        namespaces.insert(flat.clone(), &name, &function.name);
        group.push((flat.clone(), std::mem::replace(&mut function.name, flat)));
        tools.push(function);
    }
    groups.push(namespace_group(&name, t.description.as_deref(), &group));
    Ok(())
}

/// The schema of a tool without `parameters`: an object with no members.
/// `additionalProperties: false` keeps it valid under strict mode, which is
/// the Responses default.
fn empty_object_schema() -> Value {
    let mut schema = Map::new();
    schema.insert("type".to_owned(), Value::String("object".to_owned()));
    schema.insert("properties".to_owned(), Value::Object(Map::new()));
    schema.insert("additionalProperties".to_owned(), Value::Bool(false));
    Value::Object(schema)
}

fn convert_tool_choice(choice: wire::ToolChoice) -> Result<ToolChoice, ApiError> {
    match choice {
        wire::ToolChoice::Mode(ToolChoiceMode::Auto) => Ok(ToolChoice::Auto),
        wire::ToolChoice::Mode(ToolChoiceMode::None) => Ok(ToolChoice::None),
        wire::ToolChoice::Mode(ToolChoiceMode::Required) => Ok(ToolChoice::Required),
        wire::ToolChoice::Named(named) => function_tool_choice(&named.kind, named.name, || {
            ApiError::invalid("tool_choice.name", "a function tool_choice needs a `name`")
        }),
    }
}

fn convert_text_format(format: TextFormat) -> Result<ResponseFormat, ApiError> {
    Ok(match format {
        TextFormat::Text => ResponseFormat::Text,
        TextFormat::JsonObject => ResponseFormat::JsonObject,
        TextFormat::JsonSchema(f) => {
            if !f.schema.is_object() {
                return Err(ApiError::invalid(
                    "text.format.schema",
                    "`schema` must be a JSON Schema object",
                ));
            }
            ResponseFormat::JsonSchema {
                name: f.name,
                schema: f.schema,
                strict: f.strict,
                description: f.description,
            }
        }
    })
}

/// Keep the vetted passthrough fields; drop every other unknown field.
fn native_fields(
    extra: Map<String, Value>,
    verbosity: Option<String>,
) -> Result<Option<NativeFields>, ApiError> {
    let mut fields = Map::new();
    for (key, value) in extra {
        if value.is_null() || !NATIVE_ALLOWLIST.contains(&key.as_str()) {
            continue;
        }
        let (ok, expected) = match key.as_str() {
            "metadata" => (value.is_object(), "an object"),
            "include" => (
                value
                    .as_array()
                    .is_some_and(|a| a.iter().all(Value::is_string)),
                "an array of strings",
            ),
            "top_logprobs" => (
                value.as_u64().is_some_and(|n| n <= 20),
                "an integer from 0 to 20",
            ),
            _ => (value.is_string(), "a string"),
        };
        if !ok {
            return Err(ApiError::invalid(
                key.clone(),
                format!("`{key}` must be {expected}"),
            ));
        }
        fields.insert(key, value);
    }
    if let Some(verbosity) = verbosity {
        fields.insert(VERBOSITY.to_owned(), Value::String(verbosity));
    }
    Ok((!fields.is_empty()).then_some(NativeFields {
        protocol: Some(Protocol::Responses),
        fields,
        betas: Vec::new(),
    }))
}
