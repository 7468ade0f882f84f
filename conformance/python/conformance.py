#!/usr/bin/env python3
"""The conformance matrix, driven by the official OpenAI and Anthropic Python SDKs.

`cargo xtask conformance` runs this with the interpreter of target/conformance/venv after it
has started the router and a mock supplier; it can also be run by hand against any router:

    python conformance/python/conformance.py --matrix conformance/matrix.json \
        --base-url http://127.0.0.1:8080 --results out.jsonl \
        [--mock-url http://127.0.0.1:9100] [--models chat=M1,responses=M2,messages=M3]

with the router API key in CONFORMANCE_API_KEY (or --api-key).

Every cell (inbound protocol x route protocol x stream off/on x case) becomes one request (two
for the Messages and Responses thinking round trips) made with the SDK of the inbound protocol: `openai` for
Chat Completions, Responses and Completions, `anthropic` for Messages. Both clients validate
every response strictly (`_strict_response_validation=True`), and streams are consumed through
each SDK's own helpers (`chat.completions.stream`, `responses.stream`, `messages.stream`), so a
malformed body or event sequence fails the cell. The content the SDK parsed is then checked.

With `--mock-url` (the mock supplier's control endpoint) each cell first scripts the supplier's
reply for the route's upstream model, checks exactly what came back, and afterwards checks what
the supplier received, in its own dialect (the system prompt, the tool definition, the tool
result turn, the stop sequence, the image and its media type, the temperature, the effort or
thinking budget, the reasoning state sent back on the next turn), each route protocol read in its own dialect's
fields (Gemini `systemInstruction`, `functionResponse`, `generationConfig`, `inlineData`,
`thinkingConfig`; Converse `system`, `toolResult`, `inferenceConfig`, `image` blocks,
`additionalModelRequestFields`; Claude on Bedrock the Messages body with its
`anthropic_version`). A Messages client served by a
converted route gets a router signature (`rtr1.`), which must round-trip. Without it (a deployed
router and real models) the
checks are on shape only: text is present, a forced tool call names the tool with JSON
arguments, the stop sequence is not in the text, and so on.

Each cell's outcome is written as one JSON line to --results: `pass`, `fail` (with a detail),
`n/a` (the surface cannot express the case), `skip` (no model for that route), or
`STATUS CODE` when the router refused the request, with the error's `param` and `message`. This script does not judge the outcomes:
the runner compares them with the expectations declared in conformance/matrix.json.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
import time
import traceback
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import anthropic
import openai

CLIENT = "python"

# What every cell sends and, with the mock, what the supplier is scripted to answer.
FIXTURES = json.loads((Path(__file__).resolve().parent.parent / "fixtures.json").read_text(encoding="utf-8"))
USER_TEXT = FIXTURES["user_text"]
SYSTEM_TEXT = FIXTURES["system_text"]
REPLY_TEXT = FIXTURES["reply_text"]
USAGE = FIXTURES["usage"]
TOOL_NAME = FIXTURES["tool_name"]
TOOL_DESCRIPTION = FIXTURES["tool_description"]
TOOL_SCHEMA = FIXTURES["tool_schema"]
TOOL_PROMPT = FIXTURES["tool_prompt"]
TOOL_CALL_ID = FIXTURES["tool_call_id"]
TOOL_ARGUMENTS = FIXTURES["tool_arguments"]
PREVIOUS_PROMPT = FIXTURES["previous_prompt"]
PREVIOUS_CALL_ID = FIXTURES["previous_call_id"]
PREVIOUS_ARGUMENTS = FIXTURES["previous_arguments"]
TOOL_RESULT = FIXTURES["tool_result"]
TOOL_RESULT_REPLY = FIXTURES["tool_result_reply"]
REASONING = FIXTURES["reasoning"]
SIGNATURE = FIXTURES["signature"]
ROUND_TRIP_PROMPT = FIXTURES["round_trip_prompt"]
ROUND_TRIP_REPLY = FIXTURES["round_trip_reply"]
STOP_SEQUENCE = FIXTURES["stop_sequence"]
STOP_PROMPT = FIXTURES["stop_prompt"]
STOP_TEXT = FIXTURES["stop_text"]
IMAGE_PROMPT = FIXTURES["image_prompt"]
PNG_BASE64 = FIXTURES["png_base64"]
PNG_DATA_URL = f"data:image/png;base64,{PNG_BASE64}"
TEMPERATURE = FIXTURES["temperature"]
HIGH_TEMPERATURE = FIXTURES["high_temperature"]
# Output limits: Messages needs one; the thinking budget must be below it (D-19).
MAX_TOKENS = FIXTURES["max_tokens"]
THINKING_BUDGET = FIXTURES["thinking_budget"]
THINKING_MAX_TOKENS = FIXTURES["thinking_max_tokens"]
# Against a deployed router, keep real models short.
LIVE_MAX_TOKENS = FIXTURES["live_max_tokens"]
UPSTREAM_PATHS = FIXTURES["upstream_paths"]
# Claude on Bedrock: the Messages body names this version instead of a header.
BEDROCK_ANTHROPIC_VERSION = FIXTURES["bedrock_anthropic_version"]
# The ID router-gemini gives the first function call of a Gemini reply that carries none
# (Gemini's `functionCall.id` is optional and the mock, like older models, sends none).
GEMINI_FIRST_CALL_ID = FIXTURES["gemini_first_call_id"]

# The dialect each route protocol speaks to the supplier: Claude on Bedrock is the Messages
# body (InvokeModel), Converse and Gemini have their own.
DIALECTS = {
    "chat": "chat",
    "responses": "responses",
    "messages": "messages",
    "bedrock_messages": "messages",
    "gemini": "gemini",
    "bedrock_converse": "converse",
}


def dialect(route: str) -> str:
    return DIALECTS[route]
# The Messages version the router speaks (spec, Versioning 2); the SDKs default to a newer one.
ANTHROPIC_VERSION = FIXTURES["anthropic_version"]


class NotApplicable(Exception):
    """The inbound surface cannot express this case."""


class CheckFailed(Exception):
    """The SDK parsed a reply, but its content is not what the cell expects."""


def check(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


@dataclass
class Seen:
    """What the SDK parsed, normalised across the four protocols."""

    model: str = ""
    # Unix seconds (`created` / `created_at`); Messages replies carry none.
    created: float | None = None
    text: str = ""
    # (id, name, arguments as JSON text)
    tool_calls: list[tuple[str, str, str]] = field(default_factory=list)
    reasoning: str | None = None
    signature: str | None = None
    # end | tool_use | stop_sequence | length | other:<raw>
    stop: str = ""
    stop_sequence: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    # Non-empty tool argument deltas of a stream.
    argument_deltas: int = 0
    # Messages only: the reply's content blocks as request params, for the next turn.
    assistant_blocks: list[dict[str, Any]] = field(default_factory=list)
    # Responses only: the reasoning item's `encrypted_content`, and the output items as the
    # SDK parsed them, sent back as input on the next turn (the stateless way).
    encrypted_content: str | None = None
    output_items: list[dict[str, Any]] = field(default_factory=list)
    # count_tokens only.
    counted_tokens: int | None = None
    estimated_header: str | None = None


@dataclass
class Cell:
    inbound: str
    route: str
    stream: bool
    case: str
    model: str
    upstream_model: str


class Mock:
    """The mock supplier's control endpoints (crates/router-mock-supplier/src/control.rs)."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.url}{path}", data=data, method=method)
        if data is not None:
            request.add_header("content-type", "application/json")
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read() or b"null")

    def reset(self) -> None:
        self._call("POST", "/_mock/reset", {})

    def push(self, upstream_model: str, reply: dict[str, Any]) -> None:
        self._call("POST", "/_mock/scripts", {"model": upstream_model, "script": {"kind": "reply", **reply}})

    def calls(self, upstream_model: str) -> list[dict[str, Any]]:
        # The mock names each call's model: the body's `model`, or the path's for the
        # dialects that put it there (Gemini, Bedrock).
        calls = self._call("GET", "/_mock/calls")["calls"]
        return [c for c in calls if isinstance(c.get("body"), dict) and c.get("model") == upstream_model]


def scripted_reply(cell: Cell) -> dict[str, Any]:
    """The supplier's answer to the cell's (first) request."""
    reply: dict[str, Any] = {"text": REPLY_TEXT, "usage": USAGE}
    if cell.case == "tool_call":
        reply = {
            "text": "",
            "tool_calls": [{"id": TOOL_CALL_ID, "name": TOOL_NAME, "arguments": json.dumps(TOOL_ARGUMENTS)}],
            "usage": USAGE,
        }
    elif cell.case == "tool_result":
        reply["text"] = TOOL_RESULT_REPLY
    elif cell.case == "thinking":
        reply["reasoning_content"] = REASONING
        reply["thinking_signature"] = SIGNATURE
    elif cell.case == "stop":
        reply["text"] = STOP_TEXT
        if dialect(cell.route) == "messages":
            reply["finish_reason"] = "stop_sequence"
            reply["stop_sequence"] = STOP_SEQUENCE
    return reply


# ---------------------------------------------------------------------------------------------
# The four inbound surfaces: build the case's request in the surface's own terms, send it with
# the official SDK, and normalise what the SDK parsed into a `Seen`.
# ---------------------------------------------------------------------------------------------


class ChatSurface:
    CASES = {"text", "system", "tool_call", "tool_result", "thinking", "stop", "image", "temperature", "high_temperature"}

    def __init__(self, client: openai.OpenAI, live: bool) -> None:
        self.client = client
        self.live = live

    def send(self, cell: Cell) -> Seen:
        kwargs: dict[str, Any] = {"model": cell.model, "messages": [{"role": "user", "content": USER_TEXT}]}
        if self.live:
            kwargs["max_completion_tokens"] = LIVE_MAX_TOKENS
        case = cell.case
        if case == "system":
            kwargs["messages"].insert(0, {"role": "system", "content": SYSTEM_TEXT})
        elif case == "tool_call":
            kwargs["messages"] = [{"role": "user", "content": TOOL_PROMPT}]
            kwargs["tools"] = [chat_tool()]
            if self.live:
                kwargs["tool_choice"] = {"type": "function", "function": {"name": TOOL_NAME}}
        elif case == "tool_result":
            kwargs["tools"] = [chat_tool()]
            kwargs["messages"] = [
                {"role": "user", "content": PREVIOUS_PROMPT},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": PREVIOUS_CALL_ID,
                            "type": "function",
                            "function": {"name": TOOL_NAME, "arguments": json.dumps(PREVIOUS_ARGUMENTS)},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": PREVIOUS_CALL_ID, "content": TOOL_RESULT},
            ]
        elif case == "thinking":
            kwargs["reasoning_effort"] = "low"
        elif case == "stop":
            kwargs["messages"] = [{"role": "user", "content": STOP_PROMPT}]
            kwargs["stop"] = [STOP_SEQUENCE]
        elif case == "image":
            kwargs["messages"] = [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": IMAGE_PROMPT},
                        {"type": "image_url", "image_url": {"url": PNG_DATA_URL}},
                    ],
                }
            ]
        elif case in ("temperature", "high_temperature"):
            kwargs["temperature"] = temperature_of(case)
        elif case != "text":
            raise NotApplicable(case)

        seen = Seen()
        if cell.stream:
            reasoning: list[str] = []
            with self.client.chat.completions.stream(stream_options={"include_usage": True}, **kwargs) as stream:
                for event in stream:
                    if event.type == "tool_calls.function.arguments.delta" and event.arguments_delta:
                        seen.argument_deltas += 1
                    elif event.type == "chunk":
                        for choice in event.chunk.choices:
                            piece = getattr(choice.delta, "reasoning_content", None)
                            if isinstance(piece, str):
                                reasoning.append(piece)
                completion = stream.get_final_completion()
            seen.reasoning = "".join(reasoning) if reasoning else None
        else:
            completion = self.client.chat.completions.create(**kwargs)
            seen.reasoning = getattr(completion.choices[0].message, "reasoning_content", None)
        check(len(completion.choices) == 1, f"expected one choice, got {len(completion.choices)}")
        message = completion.choices[0].message
        seen.model = completion.model
        seen.created = completion.created
        seen.text = message.content or ""
        for call in message.tool_calls or []:
            seen.tool_calls.append((call.id, call.function.name, call.function.arguments))
        seen.stop = openai_stop(completion.choices[0].finish_reason)
        if completion.usage is not None:
            seen.input_tokens = completion.usage.prompt_tokens
            seen.output_tokens = completion.usage.completion_tokens
            check(
                completion.usage.total_tokens == completion.usage.prompt_tokens + completion.usage.completion_tokens,
                f"usage.total_tokens {completion.usage.total_tokens} is not prompt + completion",
            )
        return seen


class ResponsesSurface:
    # Responses has no stop sequences; its count is `responses.input_tokens.count` (issue 29).
    CASES = {
        "text", "system", "tool_call", "tool_result", "thinking", "image", "temperature", "high_temperature",
        "count_tokens",
    }

    def __init__(self, client: openai.OpenAI, live: bool) -> None:
        self.client = client
        self.live = live

    def request(self, cell: Cell) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"model": cell.model, "input": USER_TEXT, "store": False}
        if self.live:
            kwargs["max_output_tokens"] = LIVE_MAX_TOKENS
        case = cell.case
        if case == "system":
            kwargs["instructions"] = SYSTEM_TEXT
        elif case == "tool_call":
            kwargs["input"] = TOOL_PROMPT
            kwargs["tools"] = [responses_tool()]
            if self.live:
                kwargs["tool_choice"] = {"type": "function", "name": TOOL_NAME}
        elif case == "tool_result":
            kwargs["tools"] = [responses_tool()]
            kwargs["input"] = [
                {"role": "user", "content": PREVIOUS_PROMPT},
                {
                    "type": "function_call",
                    "call_id": PREVIOUS_CALL_ID,
                    "name": TOOL_NAME,
                    "arguments": json.dumps(PREVIOUS_ARGUMENTS),
                },
                {"type": "function_call_output", "call_id": PREVIOUS_CALL_ID, "output": TOOL_RESULT},
            ]
        elif case == "thinking":
            kwargs["reasoning"] = {"effort": "low"}
            # Stateless (store: false): the reasoning state comes back only when asked for.
            kwargs["include"] = ["reasoning.encrypted_content"]
        elif case == "image":
            kwargs["input"] = [
                {
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": IMAGE_PROMPT},
                        {"type": "input_image", "image_url": PNG_DATA_URL, "detail": "auto"},
                    ],
                }
            ]
        elif case in ("temperature", "high_temperature"):
            kwargs["temperature"] = temperature_of(case)
        elif case == "count_tokens":
            kwargs["instructions"] = SYSTEM_TEXT
        elif case != "text":
            raise NotApplicable(case)
        return kwargs

    def send(self, cell: Cell) -> Seen:
        kwargs = self.request(cell)
        if cell.case == "count_tokens":
            if cell.stream:
                raise NotApplicable("count_tokens has no stream form")
            return self.count_tokens(kwargs)
        return self.create(kwargs, cell.stream)

    def count_tokens(self, kwargs: dict[str, Any]) -> Seen:
        # The count body takes no `store` (nor a stream or output limit).
        body = {k: kwargs[k] for k in ("model", "input", "instructions") if k in kwargs}
        raw = self.client.responses.input_tokens.with_raw_response.count(**body)
        counted = raw.parse()
        check(counted.object == "response.input_tokens", f"object {counted.object!r}")
        return Seen(
            model=kwargs["model"],
            counted_tokens=counted.input_tokens,
            estimated_header=raw.headers.get("x-ci-token-count-estimated"),
        )

    def round_trip(self, cell: Cell, first: Seen, stream: bool) -> Seen:
        """The next turn: the first reply's output items (reasoning included) sent back as input."""
        kwargs = self.request(cell)
        kwargs["input"] = [
            {"role": "user", "content": USER_TEXT},
            *first.output_items,
            {"role": "user", "content": ROUND_TRIP_PROMPT},
        ]
        return self.create(kwargs, stream)

    def create(self, kwargs: dict[str, Any], stream: bool) -> Seen:
        seen = Seen()
        if stream:
            with self.client.responses.stream(**kwargs) as events:
                for event in events:
                    if event.type == "response.function_call_arguments.delta" and event.delta:
                        seen.argument_deltas += 1
                response = events.get_final_response()
        else:
            response = self.client.responses.create(**kwargs)
        seen.model = response.model
        seen.created = response.created_at
        reasoning: list[str] = []
        for item in response.output:
            seen.output_items.append(item.model_dump(mode="json", exclude_none=True))
            if item.type == "message":
                for part in item.content:
                    if part.type == "output_text":
                        seen.text += part.text
            elif item.type == "function_call":
                seen.tool_calls.append((item.call_id, item.name, item.arguments))
            elif item.type == "reasoning":
                reasoning.extend(summary.text for summary in item.summary)
                reasoning.extend(part.text for part in item.content or [])
                seen.encrypted_content = item.encrypted_content
        seen.reasoning = "".join(reasoning) if reasoning else None
        if response.status == "incomplete":
            seen.stop = "length"
        elif response.status != "completed":
            seen.stop = f"other:{response.status}"
        else:
            seen.stop = "tool_use" if seen.tool_calls else "end"
        if response.usage is not None:
            seen.input_tokens = response.usage.input_tokens
            seen.output_tokens = response.usage.output_tokens
            check(
                response.usage.total_tokens == response.usage.input_tokens + response.usage.output_tokens,
                f"usage.total_tokens {response.usage.total_tokens} is not input + output",
            )
        return seen


class MessagesSurface:
    CASES = {
        "text",
        "system",
        "tool_call",
        "tool_result",
        "thinking",
        "stop",
        "image",
        "temperature",
        "high_temperature",
        "count_tokens",
        "default_version",
    }

    def __init__(self, client: anthropic.Anthropic, sdk_default: anthropic.Anthropic, live: bool) -> None:
        # `client` pins anthropic-version to the router's; `sdk_default` sends the SDK's own.
        self.client = client
        self.sdk_default = sdk_default
        self.live = live

    def request(self, cell: Cell) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": cell.model,
            "max_tokens": LIVE_MAX_TOKENS if self.live else MAX_TOKENS,
            "messages": [{"role": "user", "content": USER_TEXT}],
        }
        case = cell.case
        if case == "system":
            kwargs["system"] = SYSTEM_TEXT
        elif case == "tool_call":
            kwargs["messages"] = [{"role": "user", "content": TOOL_PROMPT}]
            kwargs["tools"] = [messages_tool()]
            if self.live:
                kwargs["tool_choice"] = {"type": "tool", "name": TOOL_NAME}
        elif case == "tool_result":
            kwargs["tools"] = [messages_tool()]
            kwargs["messages"] = [
                {"role": "user", "content": PREVIOUS_PROMPT},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": PREVIOUS_CALL_ID, "name": TOOL_NAME, "input": PREVIOUS_ARGUMENTS}
                    ],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": PREVIOUS_CALL_ID, "content": TOOL_RESULT}],
                },
            ]
        elif case == "thinking":
            kwargs["max_tokens"] = THINKING_MAX_TOKENS
            kwargs["thinking"] = {"type": "enabled", "budget_tokens": THINKING_BUDGET}
        elif case == "stop":
            kwargs["messages"] = [{"role": "user", "content": STOP_PROMPT}]
            kwargs["stop_sequences"] = [STOP_SEQUENCE]
        elif case == "image":
            kwargs["messages"] = [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": IMAGE_PROMPT},
                        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_BASE64}},
                    ],
                }
            ]
        elif case in ("temperature", "high_temperature"):
            # The pinned SDK (anthropic 2.x) has no `temperature` keyword: it goes as an extra
            # body field, the SDK's own way to send a field it does not model.
            kwargs["extra_body"] = {"temperature": temperature_of(case)}
        elif case == "count_tokens":
            kwargs["system"] = SYSTEM_TEXT
        elif case not in ("text", "default_version"):
            raise NotApplicable(case)
        return kwargs

    def send(self, cell: Cell) -> Seen:
        kwargs = self.request(cell)
        if cell.case == "count_tokens":
            if cell.stream:
                raise NotApplicable("count_tokens has no stream form")
            return self.count_tokens(kwargs)
        client = self.sdk_default if cell.case == "default_version" else self.client
        return self.create(kwargs, cell.stream, client)

    def create(self, kwargs: dict[str, Any], stream: bool, client: anthropic.Anthropic | None = None) -> Seen:
        client = client or self.client
        seen = Seen()
        if stream:
            with client.messages.stream(**kwargs) as events:
                for event in events:
                    if (
                        event.type == "content_block_delta"
                        and event.delta.type == "input_json_delta"
                        and event.delta.partial_json
                    ):
                        seen.argument_deltas += 1
                message = events.get_final_message()
        else:
            message = client.messages.create(**kwargs)
        check(message.type == "message" and message.role == "assistant", "not an assistant message")
        seen.model = message.model
        reasoning: list[str] = []
        for block in message.content:
            if block.type == "text":
                seen.text += block.text
                seen.assistant_blocks.append({"type": "text", "text": block.text})
            elif block.type == "thinking":
                reasoning.append(block.thinking)
                seen.signature = block.signature
                seen.assistant_blocks.append(
                    {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
                )
            elif block.type == "tool_use":
                seen.tool_calls.append((block.id, block.name, json.dumps(block.input)))
                seen.assistant_blocks.append(
                    {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
                )
            elif block.type == "redacted_thinking":
                seen.assistant_blocks.append({"type": "redacted_thinking", "data": block.data})
        seen.reasoning = "".join(reasoning) if reasoning else None
        seen.stop = {
            "end_turn": "end",
            "tool_use": "tool_use",
            "stop_sequence": "stop_sequence",
            "max_tokens": "length",
        }.get(message.stop_reason or "", f"other:{message.stop_reason}")
        seen.stop_sequence = message.stop_sequence
        usage = message.usage
        seen.input_tokens = (
            usage.input_tokens + (usage.cache_read_input_tokens or 0) + (usage.cache_creation_input_tokens or 0)
        )
        seen.output_tokens = usage.output_tokens
        return seen

    def count_tokens(self, kwargs: dict[str, Any]) -> Seen:
        kwargs = {k: v for k, v in kwargs.items() if k != "max_tokens"}
        raw = self.client.messages.with_raw_response.count_tokens(**kwargs)
        counted = raw.parse()
        return Seen(
            model=kwargs["model"],
            counted_tokens=counted.input_tokens,
            estimated_header=raw.headers.get("x-ci-token-count-estimated"),
        )

    def round_trip(self, cell: Cell, first: Seen, stream: bool) -> Seen:
        """The next turn, carrying the reply's thinking block (with its signature) back."""
        kwargs = self.request(cell)
        kwargs["messages"] = kwargs["messages"] + [
            {"role": "assistant", "content": first.assistant_blocks},
            {"role": "user", "content": ROUND_TRIP_PROMPT},
        ]
        return self.create(kwargs, stream)


class CompletionsSurface:
    # A single text prompt: no system prompt, tools, reasoning or images.
    CASES = {"text", "stop", "temperature", "high_temperature"}

    def __init__(self, client: openai.OpenAI, lenient: openai.OpenAI, live: bool) -> None:
        self.client = client
        # The same client without response validation, for streams (see `send`).
        self.lenient = lenient
        self.live = live

    def send(self, cell: Cell) -> Seen:
        kwargs: dict[str, Any] = {"model": cell.model, "prompt": USER_TEXT}
        if self.live:
            kwargs["max_tokens"] = LIVE_MAX_TOKENS
        case = cell.case
        if case == "stop":
            kwargs["prompt"] = STOP_PROMPT
            kwargs["stop"] = [STOP_SEQUENCE]
        elif case in ("temperature", "high_temperature"):
            kwargs["temperature"] = temperature_of(case)
        elif case != "text":
            raise NotApplicable(case)

        seen = Seen()
        if cell.stream:
            finish = None
            usage = None
            # The SDK types every chunk as a `Completion`, whose `finish_reason` may not be null,
            # yet OpenAI itself sends null until the last chunk (openai/openai-openapi#100), so
            # no server can pass the SDK's strict check here. The chunks are read unvalidated
            # and each is then validated strictly with only that one allowance.
            chunks = self.lenient.completions.create(stream=True, stream_options={"include_usage": True}, **kwargs)
            for chunk in chunks:
                validate_completion_chunk(chunk)
                seen.model = chunk.model
                seen.created = chunk.created
                for choice in chunk.choices:
                    seen.text += choice.text
                    finish = choice.finish_reason or finish
                usage = chunk.usage or usage
        else:
            completion = self.client.completions.create(**kwargs)
            check(completion.object == "text_completion", f"object is {completion.object!r}")
            check(len(completion.choices) == 1, f"expected one choice, got {len(completion.choices)}")
            seen.model = completion.model
            seen.created = completion.created
            seen.text = completion.choices[0].text
            finish = completion.choices[0].finish_reason
            usage = completion.usage
        seen.stop = openai_stop(finish)
        if usage is not None:
            seen.input_tokens = usage.prompt_tokens
            seen.output_tokens = usage.completion_tokens
        return seen


def validate_completion_chunk(chunk: openai.types.Completion) -> None:
    data = chunk.to_dict(mode="json")
    check(data.get("object") == "text_completion", f"chunk object is {data.get('object')!r}")
    for choice in data.get("choices", []):
        if choice.get("finish_reason") is None:
            choice["finish_reason"] = "stop"
    try:
        openai.types.Completion.model_validate(data)
    except Exception as error:  # pydantic's ValidationError
        raise CheckFailed(f"a stream chunk does not fit the SDK's Completion type: {error}") from error


def temperature_of(case: str) -> float:
    return HIGH_TEMPERATURE if case == "high_temperature" else TEMPERATURE


def chat_tool() -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": TOOL_NAME, "description": TOOL_DESCRIPTION, "parameters": TOOL_SCHEMA},
    }


def responses_tool() -> dict[str, Any]:
    return {
        "type": "function",
        "name": TOOL_NAME,
        "description": TOOL_DESCRIPTION,
        "parameters": TOOL_SCHEMA,
        "strict": False,
    }


def messages_tool() -> dict[str, Any]:
    return {"name": TOOL_NAME, "description": TOOL_DESCRIPTION, "input_schema": TOOL_SCHEMA}


def openai_stop(finish_reason: str | None) -> str:
    return {"stop": "end", "tool_calls": "tool_use", "length": "length"}.get(
        finish_reason or "", f"other:{finish_reason}"
    )


# ---------------------------------------------------------------------------------------------
# Checks on what came back (`expect_*`) and, with the mock, on what the supplier received.
# ---------------------------------------------------------------------------------------------


def expect_reply(cell: Cell, seen: Seen, live: bool) -> None:
    check(seen.model == cell.model, f"model is {seen.model!r}, expected the public id {cell.model!r}")
    case = cell.case
    if case == "count_tokens":
        check(isinstance(seen.counted_tokens, int) and seen.counted_tokens > 0, f"input_tokens {seen.counted_tokens!r}")
        check(
            seen.estimated_header == "true",
            f"x-ci-token-count-estimated is {seen.estimated_header!r}, expected 'true'",
        )
        return
    check(seen.input_tokens is not None and seen.output_tokens is not None, "no usage")
    if seen.created is not None:
        check(abs(seen.created - time.time()) < 86400, f"created timestamp {seen.created} is not about now")
    if live:
        expect_live(cell, seen)
        return
    check(
        (seen.input_tokens, seen.output_tokens) == (USAGE["prompt_tokens"], USAGE["completion_tokens"]),
        f"usage is {seen.input_tokens}/{seen.output_tokens}, the supplier reported "
        f"{USAGE['prompt_tokens']}/{USAGE['completion_tokens']}",
    )
    if case == "tool_call":
        check(len(seen.tool_calls) == 1, f"expected one tool call, got {seen.tool_calls}")
        call_id, name, arguments = seen.tool_calls[0]
        check(name == TOOL_NAME, f"tool name {name!r}")
        if cell.route == "gemini":
            # No ID on the wire: the codec numbers the reply's calls (router-gemini).
            check(call_id == GEMINI_FIRST_CALL_ID, f"tool call id {call_id!r}, expected {GEMINI_FIRST_CALL_ID!r}")
        else:
            check(call_id == TOOL_CALL_ID, f"tool call id {call_id!r}, the supplier sent {TOOL_CALL_ID!r}")
        check(json.loads(arguments) == TOOL_ARGUMENTS, f"tool arguments {arguments!r}")
        check(seen.stop == "tool_use", f"stop reason {seen.stop!r}, expected tool use")
        check(seen.text.strip() == "", f"unexpected text {seen.text!r}")
        if cell.stream and cell.route == "gemini":
            # Gemini streams a function call whole, in one chunk: one delta, not cut up.
            check(seen.argument_deltas == 1, f"the tool arguments arrived in {seen.argument_deltas} delta(s)")
        elif cell.stream:
            # The supplier streams the arguments in several fragments; they must not arrive as one.
            check(seen.argument_deltas > 1, f"the tool arguments arrived in {seen.argument_deltas} delta(s)")
        return
    check(not seen.tool_calls, f"unexpected tool calls {seen.tool_calls}")
    expect_reasoning_state(cell, seen)
    if case == "tool_result":
        check(seen.text == TOOL_RESULT_REPLY, f"text {seen.text!r}")
        check(seen.stop == "end", f"stop reason {seen.stop!r}")
    elif case == "stop":
        check(seen.text == STOP_TEXT, f"text {seen.text!r}")
        if cell.inbound == "messages" and dialect(cell.route) == "messages":
            check(seen.stop == "stop_sequence", f"stop reason {seen.stop!r}, expected stop_sequence")
            check(seen.stop_sequence == STOP_SEQUENCE, f"stop_sequence {seen.stop_sequence!r}")
        else:
            # A Chat supplier says only "stop": which sequence matched is not known.
            check(seen.stop in ("end", "stop_sequence"), f"stop reason {seen.stop!r}")
    else:
        check(seen.text == REPLY_TEXT, f"text {seen.text!r}")
        check(seen.stop == "end", f"stop reason {seen.stop!r}")
    if case == "thinking":
        check(seen.reasoning == REASONING, f"reasoning {seen.reasoning!r}, the supplier sent {REASONING!r}")
        if cell.inbound == "messages":
            check(isinstance(seen.signature, str), "the thinking block has no signature")
            if dialect(cell.route) == "messages":
                check(seen.signature == SIGNATURE, f"signature {seen.signature!r}, the supplier sent {SIGNATURE!r}")
            else:
                # No Anthropic signature exists on a converted route: the router issues its own.
                check(seen.signature != "", "a thinking block with an empty signature")
                check(seen.signature.startswith("rtr1."), f"signature {seen.signature!r} is not a router signature")


def expect_reasoning_state(cell: Cell, seen: Seen) -> None:
    """Responses: the reasoning item carries the supplier's reasoning state to send back."""
    if cell.case != "thinking" or cell.inbound != "responses":
        return
    if dialect(cell.route) in ("responses", "messages"):
        # A Responses supplier's `encrypted_content`, or a Messages supplier's thinking signature.
        check(
            seen.encrypted_content == SIGNATURE,
            f"encrypted_content {seen.encrypted_content!r}, the supplier sent {SIGNATURE!r}",
        )


def expect_live(cell: Cell, seen: Seen) -> None:
    """Shape only: what a real model can be asked for."""
    check(seen.input_tokens > 0 and seen.output_tokens > 0, f"usage {seen.input_tokens}/{seen.output_tokens}")
    if cell.case == "tool_call":
        check(seen.tool_calls, "no tool call, though the tool was forced")
        _, name, arguments = seen.tool_calls[0]
        check(name == TOOL_NAME, f"tool name {name!r}")
        check(isinstance(json.loads(arguments), dict), f"tool arguments are not a JSON object: {arguments!r}")
        check(seen.stop == "tool_use", f"stop reason {seen.stop!r}")
        return
    check(seen.text.strip() != "" or seen.stop == "length", "no text")
    if cell.case == "stop":
        check(STOP_SEQUENCE not in seen.text, f"the stop sequence is in the text {seen.text!r}")
    if cell.case == "thinking" and seen.signature is not None:
        check(seen.signature != "", "a thinking block with an empty signature")


def upstream_path(route: str, upstream_model: str, stream: bool) -> str:
    """Where the route's dialect is called: fixed for the OpenAI and Messages endpoints; with
    the model in the path (and another method for a stream) for Gemini and Bedrock."""
    path = UPSTREAM_PATHS[route]
    if isinstance(path, dict):
        path = path["stream" if stream else "json"]
    return path.replace("{model}", upstream_model)


def expect_upstream(cell: Cell, calls: list[dict[str, Any]], requests: int) -> None:
    """What the mock supplier received, in the route's dialect."""
    check(len(calls) == requests, f"the supplier got {len(calls)} calls, expected {requests}")
    if not calls:
        return
    expected_path = upstream_path(cell.route, cell.upstream_model, cell.stream)
    for call in calls:
        check(
            call["path"] == expected_path,
            f"the supplier was called at {call['path']}, not the {cell.route} endpoint {expected_path}",
        )
        if cell.route == "bedrock_messages":
            # InvokeModel: the model and the streaming choice are in the path, the version in the body.
            sent = call["body"]
            check(
                sent.get("anthropic_version") == BEDROCK_ANTHROPIC_VERSION,
                f"anthropic_version upstream is {sent.get('anthropic_version')!r}",
            )
            check("model" not in sent and "stream" not in sent, f"model or stream in a Bedrock body: {sorted(sent)}")
    body = calls[0]["body"]
    dump = json.dumps(body)
    route, case = cell.route, cell.case
    if case == "system":
        check(SYSTEM_TEXT in upstream_system(route, body), f"no system prompt upstream: {dump[:400]}")
    elif case == "tool_call":
        expect_upstream_tool(cell, body)
    elif case == "tool_result":
        expect_upstream_tool_result(route, body)
    elif case == "stop":
        value = upstream_sampling(route, body, "stop")
        check(value in ([STOP_SEQUENCE], STOP_SEQUENCE), f"upstream stop sequences are {value!r}: {dump[:400]}")
    elif case == "image":
        expect_upstream_image(route, body)
    elif case in ("temperature", "high_temperature"):
        expected = temperature_of(case)
        value = upstream_sampling(route, body, "temperature")
        check(value == expected, f"upstream temperature {value!r}, sent {expected}: {dump[:400]}")
    elif case == "thinking":
        expect_upstream_thinking(cell, calls)
        expect_upstream_reasoning_state(cell, calls)
    else:
        check(USER_TEXT in dump, "the user's text did not reach the supplier")


def upstream_sampling(route: str, body: dict[str, Any], what: str) -> Any:
    """The stop sequences (`what` = stop) or the temperature, where the dialect keeps them."""
    kind = dialect(route)
    if kind == "gemini":
        config = body.get("generationConfig") or {}
        return config.get({"stop": "stopSequences", "temperature": "temperature"}[what])
    if kind == "converse":
        config = body.get("inferenceConfig") or {}
        return config.get({"stop": "stopSequences", "temperature": "temperature"}[what])
    if what == "stop":
        return body.get("stop_sequences" if kind == "messages" else "stop")
    return body.get("temperature")


def history(route: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The conversation turns of a body whose turns are role-tagged messages."""
    kind = dialect(route)
    if kind == "responses":
        return [item for item in body.get("input") or [] if isinstance(item, dict)]
    if kind == "gemini":
        return [turn for turn in body.get("contents") or [] if isinstance(turn, dict)]
    return [message for message in body.get("messages") or [] if isinstance(message, dict)]


def parts_of(route: str, turn: dict[str, Any]) -> list[dict[str, Any]]:
    key = "parts" if dialect(route) == "gemini" else "content"
    parts = turn.get(key)
    return [part for part in parts if isinstance(part, dict)] if isinstance(parts, list) else []


def assistant_turns(route: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    role = "model" if dialect(route) == "gemini" else "assistant"
    return [turn for turn in history(route, body) if turn.get("role") == role]


def expect_upstream_thinking(cell: Cell, calls: list[dict[str, Any]]) -> None:
    body = calls[0]["body"]
    kind = dialect(cell.route)
    if cell.inbound == "messages":
        # The budget reaches the supplier as sent, converted routes included (a Chat supplier
        # gets the `thinking` object as is, GP-50; a Responses route refuses it, GP-74), in the
        # dialect's own field: Gemini's `thinkingConfig` (thoughts included, to be shown),
        # Converse's `additionalModelRequestFields` (as Claude reads it).
        expected = {"type": "enabled", "budget_tokens": THINKING_BUDGET}
        if kind == "gemini":
            config = (body.get("generationConfig") or {}).get("thinkingConfig")
            wanted = {"includeThoughts": True, "thinkingBudget": THINKING_BUDGET}
            check(config == wanted, f"upstream thinkingConfig {config!r}, expected {wanted!r}")
        elif kind == "converse":
            extra = body.get("additionalModelRequestFields") or {}
            check(extra.get("thinking") == expected, f"upstream additionalModelRequestFields {extra!r}")
        else:
            check(body.get("thinking") == expected, f"upstream thinking {body.get('thinking')!r}, expected {expected!r}")
        second = calls[1]["body"]
        check("rtr1." not in json.dumps(second), "a router signature reached the supplier")
        assistant = assistant_turns(cell.route, second)
        check(len(assistant) == 1, f"the assistant turn did not reach the supplier: {json.dumps(second)[:400]}")
        if kind == "chat":
            # The router's signature round-tripped (the second turn succeeded); a Chat supplier
            # has no field for reasoning history, so none reaches it, and no router signature.
            check(
                not any(key.startswith("reasoning") or key == "thinking" for key in assistant[0]),
                f"reasoning history sent to a Chat supplier: {assistant[0]!r}",
            )
        elif kind == "gemini":
            # Gemini takes no thought text back (router-gemini): the model turn is the text only.
            parts = parts_of(cell.route, assistant[0])
            check(not any(part.get("thought") for part in parts), f"a thought sent back to Gemini: {parts!r}")
            check(text_of(parts) == REPLY_TEXT, f"model turn upstream: {assistant[0]!r}")
        elif kind == "converse":
            # The router's seal held Converse's own signature: it goes back as reasoningContent.
            blocks = [
                (part.get("reasoningContent") or {}).get("reasoningText") or {}
                for part in parts_of(cell.route, assistant[0])
                if "reasoningContent" in part
            ]
            check(blocks, f"the reasoning was not sent back to the supplier: {assistant[0]!r}")
            check(blocks[0].get("signature") == SIGNATURE, f"signature sent back upstream: {blocks[0]!r}")
            check(blocks[0].get("text") == REASONING, f"reasoning sent back upstream: {blocks[0]!r}")
        else:
            # The second turn carries the thinking block back, signature intact.
            blocks = [block for block in parts_of(cell.route, assistant[0]) if block.get("type") == "thinking"]
            check(blocks, "the thinking block was not sent back to the supplier")
            check(blocks[0].get("signature") == SIGNATURE, f"signature sent back upstream: {blocks[0]!r}")
            check(blocks[0].get("thinking") == REASONING, f"thinking sent back upstream: {blocks[0]!r}")
        return
    # An explicit effort travels in the route's own field (B-16, C-08, GP-74); Gemini has
    # none and takes the budget it stands for (router-gemini: low = 1024, as Google's own
    # OpenAI-compatible endpoint maps it).
    if kind == "chat":
        effort = body.get("reasoning_effort")
    elif kind == "responses":
        effort = (body.get("reasoning") or {}).get("effort")
    elif kind == "gemini":
        config = (body.get("generationConfig") or {}).get("thinkingConfig") or {}
        check(config.get("thinkingBudget") == 1024, f"upstream thinkingConfig {config!r} for effort low")
        return
    else:
        effort = (body.get("output_config") or {}).get("effort")
    check(effort == "low", f"upstream effort is {effort!r}: {json.dumps(body)[:400]}")


def expect_upstream_tool(cell: Cell, body: dict[str, Any]) -> None:
    """The tool definition in the route's dialect, its schema unchanged."""
    kind = dialect(cell.route)
    if kind == "gemini":
        declarations = [
            declaration
            for tool in body.get("tools") or []
            for declaration in tool.get("functionDeclarations") or []
        ]
        check(len(declarations) == 1, f"upstream functionDeclarations: {json.dumps(body.get('tools'))[:400]}")
        tool = declarations[0]
        check(tool.get("name") == TOOL_NAME, f"upstream tool: {tool!r}")
        check(tool.get("description") == TOOL_DESCRIPTION, f"upstream tool description: {tool!r}")
        # A JSON Schema goes as `parametersJsonSchema` (`parameters` is Google's OpenAPI subset).
        check(tool.get("parametersJsonSchema") == TOOL_SCHEMA, f"upstream tool parametersJsonSchema: {tool!r}")
        return
    if kind == "converse":
        tools = (body.get("toolConfig") or {}).get("tools") or []
        check(len(tools) == 1, f"upstream toolConfig.tools: {json.dumps(tools)[:400]}")
        spec = tools[0].get("toolSpec") or {}
        check(spec.get("name") == TOOL_NAME, f"upstream toolSpec: {spec!r}")
        check(spec.get("description") == TOOL_DESCRIPTION, f"upstream toolSpec description: {spec!r}")
        check(spec.get("inputSchema") == {"json": TOOL_SCHEMA}, f"upstream toolSpec inputSchema: {spec!r}")
        return
    tools = body.get("tools") or []
    check(len(tools) == 1, f"upstream tools: {json.dumps(tools)[:400]}")
    tool = tools[0]
    # A Responses client said `strict: false`; the others said nothing. A converted tool keeps
    # the non-strict meaning: a Responses supplier reads an absent `strict` as true, so it is
    # sent false there explicitly; Chat reads absent as false.
    strict = False if cell.inbound == "responses" or kind == "responses" else None
    if kind == "chat":
        check(tool.get("type") == "function", f"upstream tool: {tool!r}")
        function = tool.get("function") or {}
        check(function.get("name") == TOOL_NAME, f"upstream tool: {tool!r}")
        check(function.get("description") == TOOL_DESCRIPTION, f"upstream tool description: {tool!r}")
        check(function.get("parameters") == TOOL_SCHEMA, f"upstream tool parameters: {tool!r}")
        check(function.get("strict") == strict, f"upstream tool strict {function.get('strict')!r}, expected {strict!r}")
    elif kind == "responses":
        check(tool.get("type") == "function", f"upstream tool: {tool!r}")
        check(tool.get("name") == TOOL_NAME, f"upstream tool: {tool!r}")
        check(tool.get("description") == TOOL_DESCRIPTION, f"upstream tool description: {tool!r}")
        check(tool.get("parameters") == TOOL_SCHEMA, f"upstream tool parameters: {tool!r}")
        check(tool.get("strict") == strict, f"upstream tool strict {tool.get('strict')!r}, expected {strict!r}")
    else:
        check(tool.get("name") == TOOL_NAME, f"upstream tool: {tool!r}")
        check(tool.get("description") == TOOL_DESCRIPTION, f"upstream tool description: {tool!r}")
        check(tool.get("input_schema") == TOOL_SCHEMA, f"upstream tool input_schema: {tool!r}")
        check("parameters" not in tool and "function" not in tool, f"upstream tool not in Messages form: {tool!r}")


def expect_upstream_tool_result(route: str, body: dict[str, Any]) -> None:
    """The earlier call and its result, paired in the dialect's way: by ID, or on Gemini (whose
    calls carry none from the router) by the function's name."""
    dump = json.dumps(body)[:400]
    if dialect(route) == "gemini":
        calls = [part["functionCall"] for turn in history(route, body) for part in parts_of(route, turn)
                 if isinstance(part.get("functionCall"), dict)]
        check(len(calls) == 1, f"upstream functionCall parts: {dump}")
        check(calls[0].get("name") == TOOL_NAME, f"upstream functionCall: {calls[0]!r}")
        check(calls[0].get("args") == PREVIOUS_ARGUMENTS, f"upstream functionCall args: {calls[0]!r}")
        responses = [part["functionResponse"] for turn in history(route, body) for part in parts_of(route, turn)
                     if isinstance(part.get("functionResponse"), dict)]
        check(len(responses) == 1, f"upstream functionResponse parts: {dump}")
        check(responses[0].get("name") == TOOL_NAME, f"upstream functionResponse: {responses[0]!r}")
        output = (responses[0].get("response") or {}).get("output")
        check(output == TOOL_RESULT, f"upstream functionResponse.response: {responses[0]!r}")
        return
    call_id, result = upstream_tool_result(route, body)
    check(call_id == PREVIOUS_CALL_ID, f"tool result id upstream is {call_id!r}")
    check(TOOL_RESULT in result, f"tool result upstream is {result!r}")
    check(PREVIOUS_CALL_ID in upstream_tool_call_ids(route, body), f"no earlier tool call upstream: {dump}")


def data_url(url: Any) -> tuple[str | None, str | None]:
    """(media type, base64 data) of a `data:<type>;base64,<data>` URL."""
    if not isinstance(url, str) or not url.startswith("data:") or ";base64," not in url:
        return None, None
    head, _, data = url.partition(";base64,")
    return head[len("data:") :], data


def expect_upstream_image(route: str, body: dict[str, Any]) -> None:
    """One image part in the user turn, in the route's own form, with its media type."""
    kind = dialect(route)
    turns = [turn for turn in history(route, body) if turn.get("role") == "user"]
    check(len(turns) == 1, f"upstream user turns: {json.dumps(turns)[:400]}")
    parts = parts_of(route, turns[0])
    check(parts, f"upstream user content is not a list of parts: {json.dumps(turns[0])[:400]}")
    if kind == "gemini":
        images = [part["inlineData"] for part in parts if isinstance(part.get("inlineData"), dict)]
        check(len(images) == 1, f"expected one `inlineData` part upstream: {json.dumps(parts)[:400]}")
        media_type, data = images[0].get("mimeType"), images[0].get("data")
        prompts = [part.get("text") for part in parts if "text" in part]
    elif kind == "converse":
        # An image block: its format by name, its bytes base64 in JSON.
        images = [part["image"] for part in parts if isinstance(part.get("image"), dict)]
        check(len(images) == 1, f"expected one `image` block upstream: {json.dumps(parts)[:400]}")
        image_format = images[0].get("format")
        media_type = f"image/{image_format}" if isinstance(image_format, str) else None
        data = (images[0].get("source") or {}).get("bytes")
        prompts = [part.get("text") for part in parts if "text" in part]
    else:
        part_type = {"chat": "image_url", "responses": "input_image", "messages": "image"}[kind]
        images = [part for part in parts if part.get("type") == part_type]
        check(len(images) == 1, f"expected one `{part_type}` part upstream: {json.dumps(parts)[:400]}")
        image = images[0]
        if kind == "chat":
            media_type, data = data_url((image.get("image_url") or {}).get("url"))
        elif kind == "responses":
            media_type, data = data_url(image.get("image_url"))
        else:
            source = image.get("source") or {}
            check(source.get("type") == "base64", f"upstream image source: {json.dumps(source)[:200]}")
            media_type, data = source.get("media_type"), source.get("data")
        text = {"chat": "text", "responses": "input_text", "messages": "text"}[kind]
        prompts = [part.get("text") for part in parts if part.get("type") == text]
    check(media_type == "image/png", f"upstream image media type {media_type!r}: {json.dumps(images[0])[:200]}")
    check(data == PNG_BASE64, f"upstream image data differs: {json.dumps(images[0])[:200]}")
    check(prompts == [IMAGE_PROMPT], f"upstream text beside the image: {prompts!r}")


def expect_upstream_reasoning_state(cell: Cell, calls: list[dict[str, Any]]) -> None:
    """Responses: the reasoning state the client sent back reaches the supplier on the next turn,
    in the route's form; a Chat or Gemini supplier takes none, and the router documents dropping it."""
    if cell.inbound != "responses":
        return
    body = calls[1]["body"]
    dump = json.dumps(body)[:600]
    kind = dialect(cell.route)
    if kind == "responses":
        items = [item for item in body.get("input") or [] if isinstance(item, dict) and item.get("type") == "reasoning"]
        check(len(items) == 1, f"no reasoning item sent back upstream: {dump}")
        check(items[0].get("encrypted_content") == SIGNATURE, f"encrypted_content sent back upstream: {items[0]!r}")
        summary = "".join(part.get("text", "") for part in items[0].get("summary") or [])
        check(summary == REASONING, f"reasoning summary sent back upstream: {items[0]!r}")
    elif kind == "messages":
        blocks = [
            block
            for message in assistant_turns(cell.route, body)
            for block in parts_of(cell.route, message)
            if block.get("type") == "thinking"
        ]
        check(len(blocks) == 1, f"no thinking block sent back upstream: {dump}")
        check(blocks[0].get("signature") == SIGNATURE, f"signature sent back upstream: {blocks[0]!r}")
        check(blocks[0].get("thinking") == REASONING, f"thinking sent back upstream: {blocks[0]!r}")
    else:
        assistant = assistant_turns(cell.route, body)
        check(len(assistant) == 1, f"no assistant turn upstream: {dump}")
        if kind == "gemini":
            parts = parts_of(cell.route, assistant[0])
            check(not any(part.get("thought") for part in parts), f"a thought sent back to Gemini: {parts!r}")
            check(text_of(parts) == REPLY_TEXT, f"model turn upstream: {assistant[0]!r}")
        else:
            check(text_of(assistant[0].get("content")) == REPLY_TEXT, f"assistant turn upstream: {assistant[0]!r}")
            check(
                not any(key.startswith("reasoning") or key == "thinking" for key in assistant[0]),
                f"a Chat supplier was sent reasoning history: {assistant[0]!r}",
            )
    turns = history(cell.route, body)
    last = parts_of(cell.route, turns[-1]) if kind == "gemini" else turns[-1].get("content")
    check(text_of(last) == ROUND_TRIP_PROMPT, f"last turn upstream: {turns[-1]!r}")


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(text_of(part.get("text", part.get("content", ""))) for part in content if isinstance(part, dict))
    return ""


def upstream_system(route: str, body: dict[str, Any]) -> str:
    kind = dialect(route)
    if kind in ("messages", "converse"):
        # Messages: a string or text blocks; Converse: a list of `{text}` blocks.
        return text_of(body.get("system"))
    if kind == "gemini":
        return text_of((body.get("systemInstruction") or {}).get("parts"))
    if kind == "responses":
        found = text_of(body.get("instructions"))
        items = body.get("input") if isinstance(body.get("input"), list) else []
        return found + "".join(
            text_of(item.get("content")) for item in items if item.get("role") in ("system", "developer")
        )
    return "".join(
        text_of(message.get("content"))
        for message in body.get("messages", [])
        if message.get("role") in ("system", "developer")
    )


def upstream_tool_result(route: str, body: dict[str, Any]) -> tuple[str | None, str]:
    kind = dialect(route)
    if kind == "chat":
        for message in body.get("messages", []):
            if message.get("role") == "tool":
                return message.get("tool_call_id"), text_of(message.get("content"))
    elif kind == "responses":
        for item in body.get("input") or []:
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                return item.get("call_id"), text_of(item.get("output"))
    elif kind == "converse":
        for message in history(route, body):
            for block in parts_of(route, message):
                result = block.get("toolResult")
                if isinstance(result, dict):
                    return result.get("toolUseId"), text_of(result.get("content"))
    else:
        for message in history(route, body):
            for block in parts_of(route, message):
                if block.get("type") == "tool_result":
                    return block.get("tool_use_id"), text_of(block.get("content"))
    return None, ""


def upstream_tool_call_ids(route: str, body: dict[str, Any]) -> list[str]:
    kind = dialect(route)
    if kind == "chat":
        return [
            call.get("id")
            for message in body.get("messages", [])
            for call in message.get("tool_calls") or []
        ]
    if kind == "responses":
        return [
            item.get("call_id")
            for item in body.get("input") or []
            if isinstance(item, dict) and item.get("type") == "function_call"
        ]
    if kind == "converse":
        return [
            block["toolUse"].get("toolUseId")
            for message in history(route, body)
            for block in parts_of(route, message)
            if isinstance(block.get("toolUse"), dict)
        ]
    return [
        block.get("id")
        for message in history(route, body)
        for block in parts_of(route, message)
        if block.get("type") == "tool_use"
    ]


# ---------------------------------------------------------------------------------------------
# Running the matrix.
# ---------------------------------------------------------------------------------------------


def refusal(error: Exception) -> str | None:
    """`STATUS CODE` for an HTTP error the SDK raised: the OpenAI `code`, the Messages `error.type`."""
    if isinstance(error, openai.APIStatusError):
        body = error.body if isinstance(error.body, dict) else {}
        code = error.code or body.get("code") or body.get("type") or "no_code"
        return f"{error.status_code} {code}"
    if isinstance(error, anthropic.APIStatusError):
        body = error.body if isinstance(error.body, dict) else {}
        inner = body.get("error") if isinstance(body.get("error"), dict) else {}
        return f"{error.status_code} {inner.get('type') or 'no_type'}"
    return None


def error_param(error: Exception) -> str | None:
    """The error's `param`: the OpenAI SDK lifts it out of the envelope; Messages has none."""
    if isinstance(error, openai.APIStatusError):
        return error.param
    body = getattr(error, "body", None)
    inner = body.get("error") if isinstance(body, dict) and isinstance(body.get("error"), dict) else {}
    param = inner.get("param")
    return param if isinstance(param, str) else None


def error_message(error: Exception) -> str:
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error") if isinstance(body.get("error"), dict) else body
        if isinstance(inner.get("message"), str):
            return inner["message"]
    return str(error)


def applicable(cell: Cell, surface: Any) -> bool:
    return cell.case in surface.CASES and not (cell.case == "count_tokens" and cell.stream)


def run_cell(cell: Cell, surface: Any, mock: Mock | None) -> dict[str, Any]:
    live = mock is None
    if not applicable(cell, surface):
        return {"outcome": "n/a"}
    requests = 1
    round_trip = cell.case == "thinking" and cell.inbound in ("messages", "responses")
    if round_trip:
        requests = 2
    elif cell.case == "count_tokens":
        requests = 0
    if mock is not None:
        try:
            mock.reset()
            mock.push(cell.upstream_model, scripted_reply(cell))
            if requests == 2:
                mock.push(cell.upstream_model, {"text": ROUND_TRIP_REPLY, "usage": USAGE})
        except OSError as error:
            return {"outcome": "fail", "detail": f"could not script the mock supplier: {error}"}
    try:
        seen = surface.send(cell)
        expect_reply(cell, seen, live)
        if round_trip:
            second = surface.round_trip(cell, seen, cell.stream)
            if not live:
                check(second.text == ROUND_TRIP_REPLY, f"second turn text {second.text!r}")
    except NotApplicable:
        return {"outcome": "n/a"}
    except CheckFailed as error:
        return {"outcome": "fail", "detail": str(error)}
    except (openai.APIStatusError, anthropic.APIStatusError) as error:
        outcome = refusal(error) or "fail"
        detail = error_message(error)
        if mock is not None:
            calls = mock.calls(cell.upstream_model)
            if calls:
                return {"outcome": "fail", "detail": f"refused with {outcome} after calling the supplier: {detail}"}
        return {"outcome": outcome, "detail": detail, "param": error_param(error), "message": detail}
    except Exception as error:  # noqa: BLE001 - any SDK or validation error fails the cell
        last = traceback.extract_tb(error.__traceback__)[-1]
        detail = f"{type(error).__name__}: {error} (at {last.name}:{last.lineno})"
        if error.__cause__ is not None:
            # A response validation error wraps pydantic's account of what did not fit.
            detail += f"; {validation_summary(error.__cause__)}"
        body = getattr(error, "body", None)
        if body is not None:
            detail += f"; body: {json.dumps(body, default=str)[:400]}"
        return {"outcome": "fail", "detail": detail}
    if mock is not None:
        try:
            expect_upstream(cell, mock.calls(cell.upstream_model), requests)
        except CheckFailed as error:
            return {"outcome": "fail", "detail": f"upstream: {error}"}
    return {"outcome": "pass"}


# ---------------------------------------------------------------------------------------------
# Image generation: its own surface and route (`images` in the matrix), JSON only.
# ---------------------------------------------------------------------------------------------

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PNG_IEND = b"\x00\x00\x00\x00IEND\xaeB`\x82"


def image_kwargs(case: str, model: str) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"model": model, "prompt": IMAGE_PROMPT}
    if case == "image_size":
        kwargs["size"] = "1024x1024"
    elif case == "image_count":
        kwargs["n"] = 2
    return kwargs


def run_image_cell(
    case: str, images: dict[str, Any], client: openai.OpenAI, mock: Mock | None, stream: bool = False
) -> dict[str, Any]:
    """One `images` cell: images.generate through the SDK, strictly validated, then the receipt,
    the PNG and (with the mock) what the supplier received. With `stream`, the SDK's
    `stream=True`, which the router refuses before any supplier call."""
    upstream = images["upstream_model"]
    if mock is None:
        # Against a deployed router there is no image model to name here.
        return {"outcome": "skip", "detail": "the image cells run against the local mock only"}
    if mock is not None:
        try:
            mock.reset()
            answer = "url" if case == "image_url" else "png"
            mock._call("POST", "/_mock/scripts", {"model": upstream, "script": {"kind": "image", "answer": answer}})
        except OSError as error:
            return {"outcome": "fail", "detail": f"could not script the mock supplier: {error}"}
    try:
        kwargs = image_kwargs(case, images["model"])
        if stream:
            kwargs["stream"] = True
        raw = client.images.with_raw_response.generate(**kwargs)
        check(not stream, "images.generate(stream=True) was answered, not refused")
        response = raw.parse()
        check(isinstance(response, openai.types.ImagesResponse), f"parsed as {type(response).__name__}")
        check(response.data is not None and len(response.data) == 1, f"data {response.data!r}")
        image = response.data[0]
        check(image.url is None, f"a url reached the client: {image.url!r}")
        png = base64.b64decode(image.b64_json or "", validate=True)
        check(png.startswith(PNG_SIGNATURE), "the image does not start with the PNG signature")
        check(png.endswith(PNG_IEND), "the image does not end with an IEND chunk")
        receipt = (response.model_extra or {}).get("receipt")
        check(isinstance(receipt, dict), f"receipt {receipt!r}")
        check(receipt.get("request_id") == raw.headers.get("x-request-id"), f"receipt {receipt!r}")
        check(receipt.get("status") == "settled", f"receipt {receipt!r}")
        check(isinstance(receipt.get("charged_usd"), (int, float)) and receipt["charged_usd"] >= 0, f"receipt {receipt!r}")
    except CheckFailed as error:
        return {"outcome": "fail", "detail": str(error)}
    except openai.APIStatusError as error:
        outcome = refusal(error) or "fail"
        detail = error_message(error)
        if mock is not None and mock.calls(upstream):
            return {"outcome": "fail", "detail": f"refused with {outcome} after calling the supplier: {detail}"}
        return {"outcome": outcome, "detail": detail, "param": error_param(error), "message": detail}
    except Exception as error:  # noqa: BLE001 - any SDK or validation error fails the cell
        detail = f"{type(error).__name__}: {error}"
        if error.__cause__ is not None:
            detail += f"; {validation_summary(error.__cause__)}"
        return {"outcome": "fail", "detail": detail}
    if mock is not None:
        calls = mock.calls(upstream)
        if len(calls) != 1:
            return {"outcome": "fail", "detail": f"upstream: {len(calls)} calls, expected 1"}
        call = calls[0]
        if not call["path"].endswith("/images/generations"):
            return {"outcome": "fail", "detail": f"upstream path {call['path']}"}
        if call["body"] != {"model": upstream, "prompt": IMAGE_PROMPT, "n": 1}:
            return {"outcome": "fail", "detail": f"upstream body {call['body']!r}"}
    return {"outcome": "pass"}


def validation_summary(error: BaseException) -> str:
    """Pydantic's errors, and for a union (a stream event) only those of the closest member."""
    errors = getattr(error, "errors", None)
    if not callable(errors):
        return f"caused by {type(error).__name__}: {' '.join(str(error).split())[:600]}"
    by_member: dict[Any, list[dict[str, Any]]] = {}
    for item in errors():
        loc = item.get("loc") or ("",)
        by_member.setdefault(loc[0], []).append(item)
    # Members whose `type` tag did not match are not the event that was meant.
    tagged = [group for group in by_member.values() if not any(tuple(e["loc"][1:]) == ("type",) for e in group)]
    closest = min(tagged or list(by_member.values()), key=len)
    return "does not fit the SDK type: " + "; ".join(
        f"{'.'.join(str(part) for part in item['loc'])}: {item['msg']}" for item in closest[:5]
    )


def parse_models(text: str | None, routes: dict[str, Any]) -> dict[str, str]:
    if not text:
        return {route: spec["model"] for route, spec in routes.items()}
    models = {}
    for pair in text.split(","):
        route, _, model = pair.partition("=")
        if route not in routes or not model:
            raise SystemExit(f"--models: expected ROUTE=MODEL with ROUTE in {sorted(routes)}, got {pair!r}")
        models[route] = model
    return models


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--matrix", required=True)
    parser.add_argument("--results", required=True)
    parser.add_argument("--base-url", required=True, help="the router, e.g. http://127.0.0.1:8080")
    parser.add_argument(
        "--api-key",
        default=os.environ.get("CONFORMANCE_API_KEY"),
        help="the router API key (default: $CONFORMANCE_API_KEY, which keeps it off the command line)",
    )
    parser.add_argument("--mock-url", help="the mock supplier; absent against a deployed router")
    parser.add_argument("--models", help="route=model,... (default: the matrix's models)")
    parser.add_argument("--only", help="run only cells whose id contains this text")
    args = parser.parse_args()
    if not args.api_key:
        parser.error("--api-key or CONFORMANCE_API_KEY is required")

    with open(args.matrix, encoding="utf-8") as file:
        matrix = json.load(file)
    models = parse_models(args.models, matrix["routes"])
    mock = Mock(args.mock_url) if args.mock_url else None
    live = mock is None
    base = args.base_url.rstrip("/")
    openai_client = openai.OpenAI(
        api_key=args.api_key, base_url=f"{base}/v1", max_retries=0, timeout=60, _strict_response_validation=True
    )
    lenient_client = openai.OpenAI(api_key=args.api_key, base_url=f"{base}/v1", max_retries=0, timeout=60)
    anthropic_client = anthropic.Anthropic(
        api_key=args.api_key,
        base_url=base,
        max_retries=0,
        timeout=60,
        default_headers={"anthropic-version": ANTHROPIC_VERSION},
        _strict_response_validation=True,
    )
    anthropic_sdk_default = anthropic.Anthropic(
        api_key=args.api_key, base_url=base, max_retries=0, timeout=60, _strict_response_validation=True
    )
    # L-01 (issue 17): the official SDK parses GET /v1/models with strict
    # validation. Its failure stops the client, so every cell fails the run.
    try:
        models_page = openai_client.models.list()
        check(len(models_page.data) > 0, "GET /v1/models listed no model")
        for model in models_page.data:
            check(model.object == "model" and isinstance(model.created, int), f"{model!r}")
        # Issue 29: the same list in Anthropic's format, as Claude Code's model
        # discovery asks for it (`limit=1000`), parsed strictly: a request carrying
        # `anthropic-version` gets `capabilities` as Anthropic's ModelCapabilities
        # objects (the router's flags, GP-18, go to every other client).
        anthropic_page = anthropic_client.models.list(limit=1000)
        check(
            [m.id for m in anthropic_page.data] == [m.id for m in models_page.data],
            f"Anthropic models.list() differs: {anthropic_page!r}",
        )
        for model in anthropic_page.data:
            check(model.type == "model" and model.display_name and model.created_at, f"{model!r}")
            caps = model.capabilities
            check(caps is not None and isinstance(caps.thinking.supported, bool), f"{model!r}")
            check(isinstance(caps.image_input.supported, bool), f"{model!r}")
        check(anthropic_page.has_more is False, f"{anthropic_page!r}")
    except Exception as error:  # noqa: BLE001 - any failure is the finding
        print(f"conformance[{CLIENT}] GET /v1/models via models.list(): {error!r}", file=sys.stderr)
        return 1
    surfaces: dict[str, Callable[[], Any]] = {
        "chat": lambda: ChatSurface(openai_client, live),
        "responses": lambda: ResponsesSurface(openai_client, live),
        "messages": lambda: MessagesSurface(anthropic_client, anthropic_sdk_default, live),
        "completions": lambda: CompletionsSurface(openai_client, lenient_client, live),
    }
    cases = matrix["clients"][CLIENT]
    with open(args.results, "w", encoding="utf-8") as results:
        for inbound in matrix["inbound"]:
            surface = surfaces[inbound]()
            for case in [c for c in cases if c in matrix["cases"]]:
                for route, spec in matrix["routes"].items():
                    for stream in (False, True):
                        cell = Cell(inbound, route, stream, case, models.get(route, ""), spec["upstream_model"])
                        cell_id = f"{inbound}/{case}/{route}/{'stream' if stream else 'json'}"
                        if args.only and args.only not in cell_id:
                            continue
                        started = time.monotonic()
                        if cell.model or not applicable(cell, surface):
                            result = run_cell(cell, surface, mock)
                        else:
                            result = {"outcome": "skip", "detail": "no model given for this route"}
                        record = {
                            "client": CLIENT,
                            "inbound": inbound,
                            "route": route,
                            "stream": stream,
                            "case": case,
                            "seconds": round(time.monotonic() - started, 3),
                            **result,
                        }
                        results.write(json.dumps(record) + "\n")
                        results.flush()
                        if result["outcome"] == "fail":
                            print(f"conformance[{CLIENT}] {cell_id}: {result.get('detail')}", file=sys.stderr)
        images = matrix.get("images")
        for case in [c for c in cases if images and c in images["cases"]]:
            for stream in (False, True):
                cell_id = f"images/{case}/images/{'stream' if stream else 'json'}"
                if args.only and args.only not in cell_id:
                    continue
                started = time.monotonic()
                # Image generation has no stream form: `stream: true` is a declared refusal.
                result = run_image_cell(case, images, openai_client, mock, stream)
                record = {
                    "client": CLIENT,
                    "inbound": "images",
                    "route": "images",
                    "stream": stream,
                    "case": case,
                    "seconds": round(time.monotonic() - started, 3),
                    **result,
                }
                results.write(json.dumps(record) + "\n")
                results.flush()
                if result["outcome"] == "fail":
                    print(f"conformance[{CLIENT}] {cell_id}: {result.get('detail')}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
