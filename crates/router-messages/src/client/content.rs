//! The content blocks of a client's messages (and their `cache_control`
//! markers): which block types each role may send, and the rules of text,
//! image, tool and thinking blocks.

use super::request::{Endpoint, no_unknown, pin};
use crate::wire::request::{self as wire, Content, ContentBlock};
use router_canonical::{ApiError, BodyExtensions, CacheControl, ContentPart, ImageSource, Role};
use serde_json::Value;

fn not_allowed(path: &str, kind: &str, role: Role) -> ApiError {
    ApiError::invalid(
        format!("{path}.type"),
        format!(
            "`{kind}` blocks are not allowed in {} messages",
            role.as_str()
        ),
    )
}

fn not_counted(path: &str, kind: &str) -> ApiError {
    ApiError::invalid(
        format!("{path}.type"),
        format!("count_tokens cannot estimate `{kind}` blocks: it counts text only"),
    )
}

/// One block of a message. User turns take text, image and tool_result;
/// assistant turns text, thinking, redacted_thinking and tool_use; a
/// system turn takes text.
pub(super) fn block(
    path: &str,
    role: Role,
    block: ContentBlock,
    endpoint: Endpoint,
    native_only: &mut Option<String>,
    extensions: &dyn BodyExtensions,
) -> Result<ContentPart, ApiError> {
    let kind = block.kind().to_owned();
    let allowed = match role {
        Role::Assistant => matches!(
            block,
            ContentBlock::Text(_)
                | ContentBlock::Thinking(_)
                | ContentBlock::RedactedThinking(_)
                | ContentBlock::ToolUse(_)
        ),
        Role::User => matches!(
            block,
            ContentBlock::Text(_) | ContentBlock::Image(_) | ContentBlock::ToolResult(_)
        ),
        _ => matches!(block, ContentBlock::Text(_)),
    };
    if !allowed && !matches!(block, ContentBlock::Unknown(_)) {
        return Err(not_allowed(path, &kind, role));
    }
    match block {
        ContentBlock::Text(b) => text_part(path, b),
        ContentBlock::Image(b) => {
            if endpoint == Endpoint::CountTokens {
                return Err(not_counted(path, &kind));
            }
            image_part(path, b, extensions)
        }
        ContentBlock::ToolUse(b) => {
            let wire::ToolUseBlock {
                id,
                name,
                input,
                cache_control,
                extra,
            } = b;
            no_unknown(path, &extra)?;
            if !input.is_object() {
                return Err(ApiError::invalid(
                    format!("{path}.input"),
                    "`input` of a tool_use block must be an object",
                ));
            }
            // The canonical tool call has no marker: a cache_control on a
            // tool_use block is checked, then not carried (see the crate docs).
            check_cache_control(path, cache_control)?;
            Ok(ContentPart::ToolCall {
                id,
                name,
                arguments: input.to_string(),
            })
        }
        ContentBlock::ToolResult(b) => {
            let wire::ToolResultBlock {
                tool_use_id,
                content,
                is_error,
                cache_control,
                extra,
            } = b;
            no_unknown(path, &extra)?;
            let content = match content {
                None => Vec::new(),
                Some(Content::Text(text)) => vec![ContentPart::Text {
                    text,
                    cache_control: None,
                }],
                Some(Content::Seq(blocks)) => blocks
                    .into_iter()
                    .enumerate()
                    .map(|(k, inner)| {
                        let inner_path = format!("{path}.content[{k}]");
                        match inner {
                            ContentBlock::Text(t) => text_part(&inner_path, t),
                            ContentBlock::Image(image) => {
                                if endpoint == Endpoint::CountTokens {
                                    return Err(not_counted(&inner_path, "image"));
                                }
                                // Chat has no image tool results (D-26).
                                pin(native_only, inner_path.clone());
                                image_part(&inner_path, image, extensions)
                            }
                            other => Err(ApiError::invalid(
                                format!("{inner_path}.type"),
                                format!(
                                    "a tool_result takes text and image blocks only, not `{}`",
                                    other.kind()
                                ),
                            )),
                        }
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            };
            Ok(ContentPart::ToolResult {
                tool_call_id: tool_use_id,
                content,
                is_error: is_error.unwrap_or(false),
                cache_control: check_cache_control(path, cache_control)?,
            })
        }
        ContentBlock::Thinking(b) => {
            if endpoint == Endpoint::CountTokens {
                return Err(not_counted(path, &kind));
            }
            let wire::ThinkingBlock {
                thinking,
                signature,
                extra,
            } = b;
            no_unknown(path, &extra)?;
            let signature = signature.ok_or_else(|| {
                ApiError::invalid(
                    format!("{path}.signature"),
                    "a thinking block in the history needs the `signature` it was returned with",
                )
            })?;
            Ok(ContentPart::Thinking {
                text: thinking,
                signature: Some(signature),
            })
        }
        ContentBlock::RedactedThinking(b) => {
            if endpoint == Endpoint::CountTokens {
                return Err(not_counted(path, &kind));
            }
            no_unknown(path, &b.extra)?;
            Ok(ContentPart::RedactedThinking { data: b.data })
        }
        ContentBlock::Unknown(_) => Err(ApiError::invalid(
            format!("{path}.type"),
            match kind.as_str() {
                "document" => {
                    "document blocks are not supported: inference accepts text and image input only"
                        .to_owned()
                }
                "server_tool_use" | "mcp_tool_use" | "mcp_tool_result" | "container_upload" => {
                    format!(
                        "`{kind}` blocks are not supported: only client tools are (no server tools, MCP or containers)"
                    )
                }
                k if k.ends_with("_tool_result") => format!(
                    "`{kind}` blocks are not supported: only client tools are (no server tools)"
                ),
                _ => format!("unknown content block type `{kind}`"),
            },
        )),
    }
}

pub(super) fn text_part(path: &str, b: wire::TextBlock) -> Result<ContentPart, ApiError> {
    let wire::TextBlock {
        text,
        cache_control,
        citations,
        extra,
    } = b;
    no_unknown(path, &extra)?;
    match citations {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) if items.is_empty() => {}
        Some(_) => {
            return Err(ApiError::invalid(
                format!("{path}.citations"),
                "citations are not supported: only `[]` or null is accepted",
            ));
        }
    }
    Ok(ContentPart::Text {
        text,
        cache_control: check_cache_control(path, cache_control)?,
    })
}

fn image_part(
    path: &str,
    b: wire::ImageBlock,
    extensions: &dyn BodyExtensions,
) -> Result<ContentPart, ApiError> {
    let wire::ImageBlock {
        source,
        cache_control,
        extra,
    } = b;
    no_unknown(path, &extra)?;
    let source = match source {
        wire::ImageSource::Base64 { media_type, data } => {
            router_canonical::parse::base64_image(path, media_type, data)?
        }
        wire::ImageSource::Url { url } => {
            let lower = url.get(..8).unwrap_or("").to_ascii_lowercase();
            if !(lower.starts_with("https://") || lower.starts_with("http://")) {
                return Err(ApiError::invalid(
                    format!("{path}.source.url"),
                    "an image URL must be https: or http:",
                ));
            }
            extensions.check_image_url(&format!("{path}.source.url"), &url)?;
            ImageSource::Url { url }
        }
        wire::ImageSource::File { file_id } => ImageSource::Upload {
            file_id,
            param: format!("{path}.source.file_id"),
        },
    };
    Ok(ContentPart::Image {
        source,
        detail: None,
        cache_control: check_cache_control(path, cache_control)?,
    })
}

/// `{type: "ephemeral", ttl?: "5m" | "1h"}`.
pub(super) fn check_cache_control(
    path: &str,
    cache_control: Option<wire::CacheControl>,
) -> Result<Option<CacheControl>, ApiError> {
    let Some(wire::CacheControl { kind, ttl }) = cache_control else {
        return Ok(None);
    };
    if kind != "ephemeral" {
        return Err(ApiError::invalid(
            format!("{path}.cache_control.type"),
            format!("cache_control type `{kind}` is not supported: use `ephemeral`"),
        ));
    }
    if let Some(ttl) = &ttl
        && ttl != "5m"
        && ttl != "1h"
    {
        return Err(ApiError::invalid(
            format!("{path}.cache_control.ttl"),
            format!("cache_control ttl `{ttl}` is not supported: use `5m` or `1h`"),
        ));
    }
    Ok(Some(CacheControl { kind, ttl }))
}
