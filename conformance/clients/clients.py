"""The real clients matrix of `cargo xtask clients` (issue 29).

Agent frameworks and client libraries, at the versions pinned in requirements.txt, against the
router and the mock supplier started by the xtask. Each cell is client x case x route:

- case: `text` (a plain prompt), `stream` (the same, streamed), `tool` (a tool round trip: the
  model calls the tool, the client runs it and sends the result back, the model answers) and
  `structured` (structured output parsed into the client's own type);
- route: `native` (a route speaking the client's own protocol), `converted` (a route of
  another protocol), `gemini` (a model served only by a Gemini `generateContent` route) or
  `bedrock` (a model served only by Claude on Amazon Bedrock, SigV4-signed).

A cell passes when the client got what the mock was scripted to say (the text, the tool call,
the parsed object) and the supplier received what the client asked for (the prompt, the tool
by name, the tool result on the second turn). `expected.json` declares every cell: `pass`, or
an object naming the documented setting the cell uses (`{"setting": "..."}`, then it must pass
with that setting), or `n/a` (the client has no such feature). The xtask compares the JSON lines
this script writes with those declarations.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
import traceback
import urllib.request
from pathlib import Path
from typing import Any, Callable

REPLY = "Hello from the mock supplier."
PROMPT = "Say hello."
TOOL_PROMPT = "What is the weather in Paris?"
TOOL_NAME = "get_weather"
TOOL_ARGUMENTS = {"city": "Paris"}
TOOL_RESULT = "18 degrees and sunny"
TOOL_REPLY = "It is 18 degrees and sunny in Paris."
STRUCTURED = {"city": "Paris", "temperature": 18}
USAGE = {"prompt_tokens": 11, "completion_tokens": 7}
# The Messages version the router speaks; current Anthropic SDKs default to a newer one.
ANTHROPIC_VERSION = "2023-06-01"
# Every client keeps its output ask within the conformance models' maximum.
MAX_TOKENS = 1024

# route protocol -> (router model, upstream model, supplier path; `{stream}` is the dialect's
# streaming variant of the path, for the dialects whose path says whether it streams)
MODELS = {
    "chat": ("conf-chat", "conf-up-chat", "/v1/chat/completions"),
    "responses": ("conf-responses", "conf-up-responses", "/v1/responses"),
    "messages": ("conf-messages", "conf-up-messages", "/v1/messages"),
    "gemini": ("conf-gemini", "conf-up-gemini", "/v1beta/models/conf-up-gemini:{stream}"),
    "bedrock": ("conf-bedrock", "conf-up-bedrock", "/v1/model/conf-up-bedrock/{stream}"),
}
# The path of each dialect whose path says whether it streams: (plain, streamed).
STREAM_PATHS = {
    "gemini": ("generateContent", "streamGenerateContent"),
    "bedrock": ("invoke", "invoke-with-response-stream"),
}


def paths(route_protocol: str) -> tuple[str, ...]:
    """The supplier paths a cell on this route may call."""
    path = MODELS[route_protocol][2]
    if route_protocol in STREAM_PATHS:
        return tuple(path.format(stream=s) for s in STREAM_PATHS[route_protocol])
    return (path,)


class CheckFailed(Exception):
    pass


def check(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


class Mock:
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

    def push(self, upstream: str, reply: dict[str, Any]) -> None:
        self._call("POST", "/_mock/scripts", {"model": upstream, "script": {"kind": "reply", **reply}})

    def calls(self) -> list[dict[str, Any]]:
        return self._call("GET", "/_mock/calls")["calls"]


def text_of(body: Any) -> str:
    """Every string in a request body, joined: where the prompt went is the dialect's business."""
    if isinstance(body, str):
        return body
    if isinstance(body, dict):
        return " ".join(text_of(v) for v in body.values())
    if isinstance(body, list):
        return " ".join(text_of(v) for v in body)
    return ""


def tool_names(body: dict[str, Any]) -> list[str]:
    names = []
    for tool in body.get("tools") or []:
        names.append(tool.get("name") or (tool.get("function") or {}).get("name") or "")
        # Gemini groups its function declarations.
        names.extend(f.get("name", "") for f in tool.get("functionDeclarations") or [])
    return names


class Env:
    def __init__(self, base_url: str, api_key: str, mock: Mock) -> None:
        self.base = base_url.rstrip("/")
        self.openai_base = f"{self.base}/v1"
        self.key = api_key
        self.mock = mock


# ---------------------------------------------------------------------------------------------
# The clients. Each takes (env, model, case) and returns what the user got: a text, or for
# `structured` the parsed object as a dict. The tool callable records that it ran.
# ---------------------------------------------------------------------------------------------


def get_weather(city: str) -> str:
    """Current weather for a city."""
    RAN.append(city)
    return TOOL_RESULT


RAN: list[str] = []
TOOL_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "description": "The city."}},
    "required": ["city"],
    "additionalProperties": False,
}


def openai_agents(env: Env, model: str, case: str) -> Any:
    from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
    from openai import AsyncOpenAI
    from pydantic import BaseModel

    set_tracing_disabled(True)
    client = AsyncOpenAI(base_url=env.openai_base, api_key=env.key, max_retries=0)
    llm = OpenAIChatCompletionsModel(model=model, openai_client=client)
    settings = ModelSettings(max_tokens=MAX_TOKENS)

    class Weather(BaseModel):
        city: str
        temperature: int

    if case == "tool":
        agent = Agent(name="a", model=llm, model_settings=settings, tools=[function_tool(get_weather)])
        return Runner.run_sync(agent, TOOL_PROMPT).final_output
    if case == "structured":
        agent = Agent(name="a", model=llm, model_settings=settings, output_type=Weather)
        return Runner.run_sync(agent, PROMPT).final_output.model_dump()
    agent = Agent(name="a", model=llm, model_settings=settings)
    if case == "stream":

        async def streamed() -> str:
            result = Runner.run_streamed(agent, PROMPT)
            async for _ in result.stream_events():
                pass
            return result.final_output

        return asyncio.run(streamed())
    return Runner.run_sync(agent, PROMPT).final_output


def openai_agents_responses(env: Env, model: str, case: str) -> Any:
    """The Agents SDK's default model class, on the Responses API."""
    from agents import Agent, ModelSettings, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled
    from openai import AsyncOpenAI

    set_tracing_disabled(True)
    client = AsyncOpenAI(base_url=env.openai_base, api_key=env.key, max_retries=0)
    llm = OpenAIResponsesModel(model=model, openai_client=client)
    # The router is stateless: nothing is stored, so the SDK must not ask to store.
    settings = ModelSettings(max_tokens=MAX_TOKENS, store=False)
    if case == "tool":
        agent = Agent(name="a", model=llm, model_settings=settings, tools=[function_tool(get_weather)])
        return Runner.run_sync(agent, TOOL_PROMPT).final_output
    agent = Agent(name="a", model=llm, model_settings=settings)
    if case == "stream":

        async def streamed() -> str:
            result = Runner.run_streamed(agent, PROMPT)
            async for _ in result.stream_events():
                pass
            return result.final_output

        return asyncio.run(streamed())
    return Runner.run_sync(agent, PROMPT).final_output


def langchain_round_trip(llm: Any) -> str:
    from langchain_core.messages import HumanMessage, ToolMessage

    bound = llm.bind_tools([get_weather])
    messages: list[Any] = [HumanMessage(TOOL_PROMPT)]
    first = bound.invoke(messages)
    check(len(first.tool_calls) == 1, f"tool calls {first.tool_calls!r}")
    call = first.tool_calls[0]
    check(call["name"] == TOOL_NAME and call["args"] == TOOL_ARGUMENTS, f"tool call {call!r}")
    messages += [first, ToolMessage(get_weather(**call["args"]), tool_call_id=call["id"])]
    return bound.invoke(messages).content


def langchain_run(llm: Any, case: str) -> Any:
    from pydantic import BaseModel

    class Weather(BaseModel):
        city: str
        temperature: int

    if case == "tool":
        return langchain_round_trip(llm)
    if case == "structured":
        return llm.with_structured_output(Weather).invoke(PROMPT).model_dump()
    if case == "stream":
        return "".join(chunk_text(c.content) for c in llm.stream(PROMPT))
    return chunk_text(llm.invoke(PROMPT).content)


def chunk_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


def langchain_openai(env: Env, model: str, case: str) -> Any:
    from langchain_openai import ChatOpenAI

    llm = ChatOpenAI(model=model, base_url=env.openai_base, api_key=env.key, max_retries=0, max_tokens=MAX_TOKENS)
    return langchain_run(llm, case)


def langchain_anthropic(env: Env, model: str, case: str) -> Any:
    from langchain_anthropic import ChatAnthropic

    llm = ChatAnthropic(
        model=model,
        base_url=env.base,
        api_key=env.key,
        max_retries=0,
        max_tokens=MAX_TOKENS,
        default_headers={"anthropic-version": ANTHROPIC_VERSION},
    )
    return langchain_run(llm, case)


def pydantic_ai_run(model: Any, case: str) -> Any:
    from pydantic import BaseModel
    from pydantic_ai import Agent

    class Weather(BaseModel):
        city: str
        temperature: int

    settings = {"max_tokens": MAX_TOKENS}
    if case == "tool":
        agent = Agent(model, tools=[get_weather], model_settings=settings)
        return agent.run_sync(TOOL_PROMPT).output
    if case == "structured":
        return Agent(model, output_type=Weather, model_settings=settings).run_sync(PROMPT).output.model_dump()
    agent = Agent(model, model_settings=settings)
    if case == "stream":

        async def streamed() -> str:
            async with agent.run_stream(PROMPT) as result:
                return "".join([delta async for delta in result.stream_text(delta=True)])

        return asyncio.run(streamed())
    return agent.run_sync(PROMPT).output


def pydantic_ai_openai(env: Env, model: str, case: str) -> Any:
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    return pydantic_ai_run(OpenAIChatModel(model, provider=OpenAIProvider(base_url=env.openai_base, api_key=env.key)), case)


def pydantic_ai_anthropic(env: Env, model: str, case: str) -> Any:
    from anthropic import AsyncAnthropic
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    client = AsyncAnthropic(
        base_url=env.base,
        api_key=env.key,
        max_retries=0,
        default_headers={"anthropic-version": ANTHROPIC_VERSION},
    )
    return pydantic_ai_run(AnthropicModel(model, provider=AnthropicProvider(anthropic_client=client)), case)


def litellm_run(env: Env, model: str, case: str, provider: str) -> Any:
    import litellm

    kwargs: dict[str, Any] = {
        "model": f"{provider}/{model}",
        "api_key": env.key,
        "max_tokens": MAX_TOKENS,
        "num_retries": 0,
    }
    if provider == "openai":
        kwargs["api_base"] = env.openai_base
    else:
        kwargs["api_base"] = env.base
        kwargs["extra_headers"] = {"anthropic-version": ANTHROPIC_VERSION}
    if case == "tool":
        tools = [{"type": "function", "function": {"name": TOOL_NAME, "description": "Current weather for a city.", "parameters": TOOL_SCHEMA}}]
        messages: list[dict[str, Any]] = [{"role": "user", "content": TOOL_PROMPT}]
        first = litellm.completion(messages=messages, tools=tools, **kwargs)
        message = first.choices[0].message
        calls = message.tool_calls or []
        check(len(calls) == 1 and calls[0].function.name == TOOL_NAME, f"tool calls {calls!r}")
        arguments = json.loads(calls[0].function.arguments)
        messages += [
            message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": calls[0].id, "content": get_weather(**arguments)},
        ]
        return litellm.completion(messages=messages, tools=tools, **kwargs).choices[0].message.content
    messages = [{"role": "user", "content": PROMPT}]
    if case == "stream":
        chunks = litellm.completion(messages=messages, stream=True, **kwargs)
        return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    return litellm.completion(messages=messages, **kwargs).choices[0].message.content


def litellm_openai(env: Env, model: str, case: str) -> Any:
    return litellm_run(env, model, case, "openai")


def litellm_anthropic(env: Env, model: str, case: str) -> Any:
    return litellm_run(env, model, case, "anthropic")


def llm_cli(env: Env, model: str, case: str) -> Any:
    """The `llm` CLI with the router as an OpenAI-compatible model (extra-openai-models.yaml)."""
    home = Path(os.environ["CLIENTS_WORK"]) / "llm-home"
    home.mkdir(parents=True, exist_ok=True)
    (home / "extra-openai-models.yaml").write_text(
        f"- model_id: router-{model}\n  model_name: {model}\n  api_base: {env.openai_base}\n  api_key_name: router\n"
    )
    (home / "keys.json").write_text(json.dumps({"router": env.key}))
    command = [str(Path(sys.executable).parent / "llm"), "-m", f"router-{model}", "-o", "max_tokens", str(MAX_TOKENS)]
    if case != "stream":
        command.append("--no-stream")
    command.append(PROMPT)
    done = subprocess.run(
        command,
        env={**os.environ, "LLM_USER_PATH": str(home)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    check(done.returncode == 0, f"llm exited {done.returncode}: {done.stderr.strip()[-400:]}")
    return done.stdout.strip()


def aisdk(provider: str) -> Callable[[Env, str, str], Any]:
    """The AI SDK (Node, conformance/clients/node/aisdk.mjs) with one of its providers."""

    def run(env: Env, model: str, case: str) -> Any:
        fixtures = {
            "prompt": PROMPT,
            "tool_prompt": TOOL_PROMPT,
            "tool_name": TOOL_NAME,
            "tool_result": TOOL_RESULT,
            "max_tokens": MAX_TOKENS,
        }
        # An ES module resolves its imports from its own folder (not NODE_PATH): it runs from a
        # copy next to the installed node_modules.
        script = Path(os.environ["CLIENTS_NODE_MODULES"]).parent / "aisdk.mjs"
        shutil.copyfile(Path(__file__).parent / "node" / "aisdk.mjs", script)
        done = subprocess.run(
            ["node", str(script), provider, case, model],
            env={
                **os.environ,
                "NODE_PATH": os.environ["CLIENTS_NODE_MODULES"],
                "CLIENTS_BASE_URL": env.base,
                "CLIENTS_FIXTURES": json.dumps(fixtures),
            },
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        check(done.returncode == 0, f"node exited {done.returncode}: {done.stderr.strip()[-600:]}")
        if case == "tool":
            # The tool ran in Node; aisdk.mjs fails the cell itself when it did not.
            RAN.append("Paris")
        return json.loads(done.stdout.strip().splitlines()[-1])["got"]

    return run


def claude_code(env: Env, model: str, case: str) -> Any:
    """Claude Code, non-interactive (`claude -p`), with the router as its Anthropic API."""
    home = Path(os.environ["CLIENTS_WORK"]) / "claude-home"
    home.mkdir(parents=True, exist_ok=True)
    prompt = TOOL_PROMPT if case == "tool" else PROMPT
    command = [os.environ["CLIENTS_CLAUDE"], "-p", prompt, "--model", model]
    if case == "tool":
        # Its own Bash tool, allowed up front (print mode asks no one).
        command += ["--allowedTools", "Bash"]
    if case == "stream":
        command += ["--output-format", "stream-json", "--verbose"]
    done = subprocess.run(
        command,
        env={
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(home),
            "ANTHROPIC_BASE_URL": env.base,
            "ANTHROPIC_AUTH_TOKEN": env.key,
            "ANTHROPIC_SMALL_FAST_MODEL": model,
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_ERROR_REPORTING": "1",
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=home,
    )
    check(done.returncode == 0, f"claude exited {done.returncode}: {(done.stdout + done.stderr).strip()[-600:]}")
    if case == "stream":
        result = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        finals = [r.get("result") for r in result if r.get("type") == "result"]
        check(finals, f"no result event: {done.stdout[-400:]}")
        return finals[-1]
    return done.stdout.strip()


def codex(env: Env, model: str, case: str) -> Any:
    """Codex CLI, non-interactive (`codex exec`), with the router as a Responses provider of
    its config.toml, as docs/guide/responses.md#codex shows."""
    home = Path(os.environ["CLIENTS_WORK"]) / "codex-home"
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        f'model = "{model}"\n'
        'model_provider = "router"\n'
        'web_search = "disabled"\n'
        "\n[model_providers.router]\n"
        'name = "Router"\n'
        f'base_url = "{env.openai_base}"\n'
        'env_key = "ROUTER_API_KEY"\n'
        'wire_api = "responses"\n'
    )
    done = subprocess.run(
        [os.environ["CLIENTS_CODEX"], "exec", "--skip-git-repo-check", TOOL_PROMPT if case == "tool" else PROMPT],
        env={
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(home),
            "CODEX_HOME": str(home),
            "ROUTER_API_KEY": env.key,
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=home,
        stdin=subprocess.DEVNULL,
    )
    check(done.returncode == 0, f"codex exited {done.returncode}: {(done.stdout + done.stderr).strip()[-800:]}")
    return done.stdout.strip()


# client -> (its protocol, the function)
CLIENTS: dict[str, tuple[str, Callable[[Env, str, str], Any]]] = {
    "openai-agents": ("chat", openai_agents),
    "openai-agents-responses": ("responses", openai_agents_responses),
    "langchain-openai": ("chat", langchain_openai),
    "langchain-anthropic": ("messages", langchain_anthropic),
    "pydantic-ai-openai": ("chat", pydantic_ai_openai),
    "pydantic-ai-anthropic": ("messages", pydantic_ai_anthropic),
    "litellm-openai": ("chat", litellm_openai),
    "litellm-anthropic": ("messages", litellm_anthropic),
    "llm-cli": ("chat", llm_cli),
    "aisdk-openai-chat": ("chat", aisdk("openai-chat")),
    "aisdk-openai-responses": ("responses", aisdk("openai-responses")),
    "aisdk-anthropic": ("messages", aisdk("anthropic")),
    "claude-code": ("messages", claude_code),
    "codex": ("responses", codex),
}
# The converted route of each client protocol.
CONVERTED = {"chat": "messages", "responses": "chat", "messages": "chat"}


def scripts(case: str) -> list[dict[str, Any]]:
    if case == "tool":
        return [
            {"text": "", "tool_calls": [{"id": "call_1", "name": TOOL_NAME, "arguments": json.dumps(TOOL_ARGUMENTS)}], "usage": USAGE},
            {"text": TOOL_REPLY, "usage": USAGE},
        ]
    if case == "structured":
        # Some clients ask for a JSON schema, others force a tool: both are answered.
        return [
            {
                "text": json.dumps(STRUCTURED),
                "tool_calls": [],
                "usage": USAGE,
            }
        ]
    return [{"text": REPLY, "usage": USAGE}]


def expect(client: str, case: str, got: Any, calls: list[dict[str, Any]], route_protocol: str, upstream: str) -> None:
    allowed = paths(route_protocol)
    path = allowed[0]
    mine = [c for c in calls if c.get("model") == upstream]
    check(mine, f"the supplier got no call for {upstream}; calls: {[c.get('path') for c in calls]}; the client got {str(got)[:300]!r}")
    check(all(c["path"] in allowed for c in mine), f"supplier paths {[c['path'] for c in mine]}, expected one of {allowed}")
    first = mine[0]["body"]
    if os.environ.get("CLIENTS_DEBUG"):
        print(f"DEBUG {path} tools={json.dumps(first.get('tools'))[:3000]}", file=sys.stderr)
    if case == "tool" and client in ("claude-code", "codex"):
        check(got == TOOL_REPLY, f"the client got {got!r}")
        own = "Bash" if client == "claude-code" else "exec_command"
        check(own in tool_names(first), f"tools sent {tool_names(first)!r}")
        check(any(TOOL_RESULT in text_of(c["body"]) for c in mine[1:]), "the Bash output did not reach the supplier")
        return
    if case == "tool":
        check(got == TOOL_REPLY, f"the client got {got!r}")
        check(RAN == ["Paris"], f"the tool ran for {RAN!r}")
        check(len(mine) == 2, f"{len(mine)} supplier calls, expected 2")
        check(TOOL_NAME in tool_names(first), f"tools sent {tool_names(first)!r}")
        check(TOOL_RESULT in text_of(mine[1]["body"]), "the tool result did not reach the supplier")
        if path == "/v1/messages" and client == "aisdk-anthropic":
            # Its tools carry `eager_input_streaming`: forwarded on the native route.
            sent = [t.get("eager_input_streaming") for t in first.get("tools") or []]
            check(sent == [True], f"eager_input_streaming sent {sent!r}")
        return
    if case == "structured":
        check(got == STRUCTURED, f"the client got {got!r}")
        return
    check(got == REPLY, f"the client got {got!r}")
    check(PROMPT in text_of(first), "the prompt did not reach the supplier")
    if case == "stream":
        if route_protocol in STREAM_PATHS:
            check(mine[0]["path"] == allowed[1], f"the supplier was not asked to stream: {mine[0]['path']}")
        else:
            check(first.get("stream") is True, "the supplier was not asked to stream")


# How each client asks for structured output: a JSON schema (the reply is the JSON text) or a
# forced tool whose arguments are the object (the reply is a call of that tool).
STRUCTURED_TOOL = {
    "langchain-anthropic": "Weather",
    "pydantic-ai-openai": "final_result",
    "pydantic-ai-anthropic": "final_result",
    "aisdk-anthropic": "json",
}


def structured_scripts(client: str) -> list[dict[str, Any]]:
    tool = STRUCTURED_TOOL.get(client)
    if tool is None:
        return scripts("structured")
    return [{"text": "", "tool_calls": [{"id": "call_s", "name": tool, "arguments": json.dumps(STRUCTURED)}], "usage": USAGE}]


def run_cell(env: Env, client: str, case: str, route: str) -> dict[str, Any]:
    protocol, run = CLIENTS[client]
    route_protocol = {"native": protocol, "converted": CONVERTED[protocol]}.get(route, route)
    model, upstream, _ = MODELS[route_protocol]
    RAN.clear()
    env.mock.reset()
    replies = structured_scripts(client) if case == "structured" else scripts(case)
    if client == "claude-code" and case == "tool":
        # Claude Code's own tool: Bash runs `echo` and the output is the tool result.
        replies = [
            {"text": "", "tool_calls": [{"id": "toolu_1", "name": "Bash", "arguments": json.dumps({"command": f"echo '{TOOL_RESULT}'", "description": "Weather"})}], "usage": USAGE},
        ] + [{"text": TOOL_REPLY, "usage": USAGE}] * 6
    elif client == "codex" and case == "tool":
        # Codex's own command tool runs `echo` and the output is the tool result.
        replies = [
            {"text": "", "tool_calls": [{"id": "call_1", "name": "exec_command", "arguments": json.dumps({"cmd": f"echo '{TOOL_RESULT}'"})}], "usage": USAGE},
        ] + [{"text": TOOL_REPLY, "usage": USAGE}] * 6
    elif client in ("claude-code", "codex"):
        # Besides the answer it may ask for a title: every call gets the reply.
        replies = replies * 6
    for reply in replies:
        env.mock.push(upstream, reply)
    try:
        got = run(env, model, case)
        expect(client, case, got, env.mock.calls(), route_protocol, upstream)
    except CheckFailed as error:
        return {"outcome": "fail", "detail": str(error)}
    except Exception as error:  # noqa: BLE001 - any client failure is the finding
        last = traceback.extract_tb(error.__traceback__)[-1]
        return {"outcome": "fail", "detail": f"{type(error).__name__}: {str(error)[:600]} (at {last.name}:{last.lineno})"}
    return {"outcome": "pass"}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--mock-url", required=True)
    parser.add_argument("--expected", required=True)
    parser.add_argument("--results", required=True)
    parser.add_argument("--only", default=None)
    args = parser.parse_args()
    env = Env(args.base_url, os.environ["CLIENTS_API_KEY"], Mock(args.mock_url))
    expected = json.loads(Path(args.expected).read_text())["cells"]
    with open(args.results, "w", encoding="utf-8") as results:
        for client, cases in expected.items():
            for case, routes in cases.items():
                for route, declared in routes.items():
                    cell = f"{client}/{case}/{route}"
                    if args.only and args.only not in cell:
                        continue
                    started = time.monotonic()
                    if declared == "n/a":
                        result = {"outcome": "n/a"}
                    else:
                        result = run_cell(env, client, case, route)
                    if isinstance(declared, dict) and "refused" in declared:
                        # A declared refusal: the client must fail with the router's words,
                        # and the supplier must not have been called.
                        said = result.get("detail", "")
                        protocol = CLIENTS[client][0]
                        route_protocol = {"native": protocol, "converted": CONVERTED[protocol]}.get(route, route)
                        upstream = MODELS[route_protocol][1]
                        called = [c for c in env.mock.calls() if c.get("model") == upstream]
                        refused = result["outcome"] == "fail" and declared["refused"] in said and not called
                        result = {"outcome": "refused" if refused else "fail", "detail": said}
                    record = {"client": client, "case": case, "route": route, "seconds": round(time.monotonic() - started, 2), **result}
                    results.write(json.dumps(record) + "\n")
                    results.flush()
                    if result["outcome"] == "fail":
                        print(f"clients: {cell}: {result['detail']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
