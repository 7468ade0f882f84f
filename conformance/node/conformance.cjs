#!/usr/bin/env node
// The conformance matrix, driven by the official OpenAI and Anthropic Node SDKs (`openai`,
// `@anthropic-ai/sdk`): the same cells, requests and checks as conformance/python/conformance.py,
// whose docstring explains them. `cargo xtask conformance` installs the SDKs into
// target/conformance/node and runs this file with NODE_PATH pointing there:
//
//   NODE_PATH=target/conformance/node/node_modules CONFORMANCE_API_KEY=KEY \
//     node conformance/node/conformance.cjs --matrix conformance/matrix.json \
//     --base-url http://127.0.0.1:8080 --results out.jsonl [--mock-url URL] [--models ...]
//
// Streams are consumed through each SDK's own helpers (`chat.completions.stream`,
// `responses.stream`, `messages.stream` with their final-object accessors), so a malformed
// event sequence fails the cell. The Node SDKs do not validate response bodies at run time
// (their types are compile-time only), so these checks are on the parsed content alone.
// Each cell's outcome is one JSON line in --results (a refusal with the error's `param` and
// `message`); the runner compares it with the matrix.

'use strict';

const fs = require('node:fs');
const path = require('node:path');
const { parseArgs } = require('node:util');
const OpenAI = require('openai');
const Anthropic = require('@anthropic-ai/sdk');

const CLIENT = 'node';
const F = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'fixtures.json'), 'utf8'));
const PNG_DATA_URL = `data:image/png;base64,${F.png_base64}`;

class NotApplicable extends Error {}
class CheckFailed extends Error {}

function check(condition, message) {
  if (!condition) throw new CheckFailed(message);
}

function deepEqual(a, b) {
  return JSON.stringify(sortKeys(a)) === JSON.stringify(sortKeys(b));
}

function sortKeys(value) {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.keys(value).sort().map((k) => [k, sortKeys(value[k])]));
  }
  return value;
}

function newSeen() {
  return {
    model: '',
    created: null, // Unix seconds (`created` / `created_at`); Messages replies carry none.
    text: '',
    toolCalls: [], // [id, name, arguments JSON text]
    reasoning: null,
    signature: null,
    stop: '',
    stopSequence: null,
    inputTokens: null,
    outputTokens: null,
    argumentDeltas: 0, // non-empty tool argument deltas of a stream
    assistantBlocks: [], // Messages: the reply's content blocks as request params, for the next turn
    // Responses: the reasoning item's `encrypted_content`, and the output items, sent back as
    // input on the next turn (the stateless way).
    encryptedContent: null,
    outputItems: [],
    countedTokens: null,
    estimatedHeader: null,
  };
}

// The mock supplier's control endpoints (crates/router-mock-supplier/src/control.rs).
class Mock {
  constructor(url) {
    this.url = url.replace(/\/+$/, '');
  }

  async call(method, route, body) {
    const response = await fetch(`${this.url}${route}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`mock ${route}: HTTP ${response.status}: ${text}`);
    return text ? JSON.parse(text) : null;
  }

  reset() {
    return this.call('POST', '/_mock/reset', {});
  }

  push(upstreamModel, reply) {
    return this.call('POST', '/_mock/scripts', { model: upstreamModel, script: { kind: 'reply', ...reply } });
  }

  async calls(upstreamModel) {
    const { calls } = await this.call('GET', '/_mock/calls');
    // The mock names each call's model: the body's `model`, or the path's for the dialects
    // that put it there (Gemini, Bedrock).
    return calls.filter((c) => c.body && typeof c.body === 'object' && c.model === upstreamModel);
  }
}

function scriptedReply(cell) {
  const reply = { text: F.reply_text, usage: F.usage };
  switch (cell.case) {
    case 'tool_call':
      return {
        text: '',
        tool_calls: [{ id: F.tool_call_id, name: F.tool_name, arguments: JSON.stringify(F.tool_arguments) }],
        usage: F.usage,
      };
    case 'tool_result':
      return { ...reply, text: F.tool_result_reply };
    case 'thinking':
      return { ...reply, reasoning_content: F.reasoning, thinking_signature: F.signature };
    case 'stop':
      return dialect(cell.route) === 'messages'
        ? { ...reply, text: F.stop_text, finish_reason: 'stop_sequence', stop_sequence: F.stop_sequence }
        : { ...reply, text: F.stop_text };
    default:
      return reply;
  }
}

function openaiStop(finishReason) {
  return { stop: 'end', tool_calls: 'tool_use', length: 'length' }[finishReason] ?? `other:${finishReason}`;
}

const chatTool = () => ({
  type: 'function',
  function: { name: F.tool_name, description: F.tool_description, parameters: F.tool_schema },
});
const responsesTool = () => ({
  type: 'function',
  name: F.tool_name,
  description: F.tool_description,
  parameters: F.tool_schema,
  strict: false,
});
const temperatureOf = (caseName) => (caseName === 'high_temperature' ? F.high_temperature : F.temperature);
const messagesTool = () => ({ name: F.tool_name, description: F.tool_description, input_schema: F.tool_schema });

// ---------------------------------------------------------------------------------------------
// The four inbound surfaces.
// ---------------------------------------------------------------------------------------------

class ChatSurface {
  static CASES = new Set([
    'text',
    'system',
    'tool_call',
    'tool_result',
    'thinking',
    'stop',
    'image',
    'temperature',
    'high_temperature',
  ]);

  constructor(client, live) {
    this.client = client;
    this.live = live;
  }

  async send(cell) {
    const params = { model: cell.model, messages: [{ role: 'user', content: F.user_text }] };
    if (this.live) params.max_completion_tokens = F.live_max_tokens;
    switch (cell.case) {
      case 'text':
        break;
      case 'system':
        params.messages.unshift({ role: 'system', content: F.system_text });
        break;
      case 'tool_call':
        params.messages = [{ role: 'user', content: F.tool_prompt }];
        params.tools = [chatTool()];
        if (this.live) params.tool_choice = { type: 'function', function: { name: F.tool_name } };
        break;
      case 'tool_result':
        params.tools = [chatTool()];
        params.messages = [
          { role: 'user', content: F.previous_prompt },
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              {
                id: F.previous_call_id,
                type: 'function',
                function: { name: F.tool_name, arguments: JSON.stringify(F.previous_arguments) },
              },
            ],
          },
          { role: 'tool', tool_call_id: F.previous_call_id, content: F.tool_result },
        ];
        break;
      case 'thinking':
        params.reasoning_effort = 'low';
        break;
      case 'stop':
        params.messages = [{ role: 'user', content: F.stop_prompt }];
        params.stop = [F.stop_sequence];
        break;
      case 'image':
        params.messages = [
          {
            role: 'user',
            content: [
              { type: 'text', text: F.image_prompt },
              { type: 'image_url', image_url: { url: PNG_DATA_URL } },
            ],
          },
        ];
        break;
      case 'temperature':
      case 'high_temperature':
        params.temperature = temperatureOf(cell.case);
        break;
      default:
        throw new NotApplicable(cell.case);
    }

    const seen = newSeen();
    let completion;
    if (cell.stream) {
      const stream = this.client.chat.completions.stream({ ...params, stream_options: { include_usage: true } });
      stream.on('tool_calls.function.arguments.delta', (event) => {
        if (event.arguments_delta) seen.argumentDeltas += 1;
      });
      const reasoning = [];
      for await (const chunk of stream) {
        for (const choice of chunk.choices) {
          if (typeof choice.delta?.reasoning_content === 'string') reasoning.push(choice.delta.reasoning_content);
        }
      }
      completion = await stream.finalChatCompletion();
      seen.reasoning = reasoning.length ? reasoning.join('') : null;
    } else {
      completion = await this.client.chat.completions.create(params);
      seen.reasoning = completion.choices[0]?.message?.reasoning_content ?? null;
    }
    check(completion.choices.length === 1, `expected one choice, got ${completion.choices.length}`);
    const message = completion.choices[0].message;
    seen.model = completion.model;
    seen.created = completion.created;
    seen.text = message.content ?? '';
    for (const call of message.tool_calls ?? []) {
      seen.toolCalls.push([call.id, call.function.name, call.function.arguments]);
    }
    seen.stop = openaiStop(completion.choices[0].finish_reason);
    if (completion.usage) {
      seen.inputTokens = completion.usage.prompt_tokens;
      seen.outputTokens = completion.usage.completion_tokens;
      check(
        completion.usage.total_tokens === completion.usage.prompt_tokens + completion.usage.completion_tokens,
        `usage.total_tokens ${completion.usage.total_tokens} is not prompt + completion`,
      );
    }
    return seen;
  }
}

class ResponsesSurface {
  // Responses has no stop sequences; its count is `responses.inputTokens.count` (issue 29).
  static CASES = new Set([
    'text',
    'system',
    'tool_call',
    'tool_result',
    'thinking',
    'image',
    'temperature',
    'high_temperature',
    'count_tokens',
  ]);

  constructor(client, live) {
    this.client = client;
    this.live = live;
  }

  request(cell) {
    const params = { model: cell.model, input: F.user_text, store: false };
    if (this.live) params.max_output_tokens = F.live_max_tokens;
    switch (cell.case) {
      case 'text':
        break;
      case 'system':
        params.instructions = F.system_text;
        break;
      case 'tool_call':
        params.input = F.tool_prompt;
        params.tools = [responsesTool()];
        if (this.live) params.tool_choice = { type: 'function', name: F.tool_name };
        break;
      case 'tool_result':
        params.tools = [responsesTool()];
        params.input = [
          { role: 'user', content: F.previous_prompt },
          {
            type: 'function_call',
            call_id: F.previous_call_id,
            name: F.tool_name,
            arguments: JSON.stringify(F.previous_arguments),
          },
          { type: 'function_call_output', call_id: F.previous_call_id, output: F.tool_result },
        ];
        break;
      case 'thinking':
        params.reasoning = { effort: 'low' };
        // Stateless (store: false): the reasoning state comes back only when asked for.
        params.include = ['reasoning.encrypted_content'];
        break;
      case 'image':
        params.input = [
          {
            role: 'user',
            content: [
              { type: 'input_text', text: F.image_prompt },
              { type: 'input_image', image_url: PNG_DATA_URL, detail: 'auto' },
            ],
          },
        ];
        break;
      case 'temperature':
      case 'high_temperature':
        params.temperature = temperatureOf(cell.case);
        break;
      case 'count_tokens':
        params.instructions = F.system_text;
        break;
      default:
        throw new NotApplicable(cell.case);
    }
    return params;
  }

  send(cell) {
    const params = this.request(cell);
    if (cell.case === 'count_tokens') return this.countTokens(params);
    return this.create(params, cell.stream);
  }

  // The Responses count (issue 29): no `store`, stream or output limit in its body.
  async countTokens(params) {
    const body = { model: params.model, input: params.input, instructions: params.instructions };
    const inputTokens = this.client.responses.inputTokens ?? this.client.beta.responses.inputTokens;
    const { data, response } = await inputTokens.count(body).withResponse();
    check(data.object === 'response.input_tokens', `object ${data.object}`);
    const seen = newSeen();
    seen.model = params.model;
    seen.countedTokens = data.input_tokens;
    seen.estimatedHeader = response.headers.get('x-ci-token-count-estimated');
    return seen;
  }

  // The next turn: the first reply's output items (reasoning included) sent back as input.
  roundTrip(cell, first, stream) {
    const params = this.request(cell);
    params.input = [
      { role: 'user', content: F.user_text },
      ...first.outputItems,
      { role: 'user', content: F.round_trip_prompt },
    ];
    return this.create(params, stream);
  }

  async create(params, stream) {
    const seen = newSeen();
    let response;
    if (stream) {
      const events = this.client.responses.stream(params);
      for await (const event of events) {
        if (event.type === 'response.function_call_arguments.delta' && event.delta) seen.argumentDeltas += 1;
      }
      response = await events.finalResponse();
    } else {
      response = await this.client.responses.create(params);
    }
    seen.model = response.model;
    seen.created = response.created_at;
    const reasoning = [];
    for (const item of response.output) {
      seen.outputItems.push(JSON.parse(JSON.stringify(item)));
      if (item.type === 'message') {
        for (const part of item.content) if (part.type === 'output_text') seen.text += part.text;
      } else if (item.type === 'function_call') {
        seen.toolCalls.push([item.call_id, item.name, item.arguments]);
      } else if (item.type === 'reasoning') {
        for (const summary of item.summary ?? []) reasoning.push(summary.text);
        for (const part of item.content ?? []) reasoning.push(part.text);
        seen.encryptedContent = item.encrypted_content ?? null;
      }
    }
    seen.reasoning = reasoning.length ? reasoning.join('') : null;
    if (response.status === 'incomplete') seen.stop = 'length';
    else if (response.status !== 'completed') seen.stop = `other:${response.status}`;
    else seen.stop = seen.toolCalls.length ? 'tool_use' : 'end';
    if (response.usage) {
      seen.inputTokens = response.usage.input_tokens;
      seen.outputTokens = response.usage.output_tokens;
      check(
        response.usage.total_tokens === response.usage.input_tokens + response.usage.output_tokens,
        `usage.total_tokens ${response.usage.total_tokens} is not input + output`,
      );
    }
    return seen;
  }
}

class MessagesSurface {
  static CASES = new Set([
    'text',
    'system',
    'tool_call',
    'tool_result',
    'thinking',
    'stop',
    'image',
    'temperature',
    'high_temperature',
    'count_tokens',
    'default_version',
  ]);

  // `client` pins anthropic-version to the router's; `sdkDefault` sends the SDK's own.
  constructor(client, sdkDefault, live) {
    this.client = client;
    this.sdkDefault = sdkDefault;
    this.live = live;
  }

  request(cell) {
    const params = {
      model: cell.model,
      max_tokens: this.live ? F.live_max_tokens : F.max_tokens,
      messages: [{ role: 'user', content: F.user_text }],
    };
    switch (cell.case) {
      case 'text':
      case 'default_version':
        break;
      case 'system':
      case 'count_tokens':
        params.system = F.system_text;
        break;
      case 'tool_call':
        params.messages = [{ role: 'user', content: F.tool_prompt }];
        params.tools = [messagesTool()];
        if (this.live) params.tool_choice = { type: 'tool', name: F.tool_name };
        break;
      case 'tool_result':
        params.tools = [messagesTool()];
        params.messages = [
          { role: 'user', content: F.previous_prompt },
          {
            role: 'assistant',
            content: [{ type: 'tool_use', id: F.previous_call_id, name: F.tool_name, input: F.previous_arguments }],
          },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: F.previous_call_id, content: F.tool_result }] },
        ];
        break;
      case 'thinking':
        params.max_tokens = F.thinking_max_tokens;
        params.thinking = { type: 'enabled', budget_tokens: F.thinking_budget };
        break;
      case 'stop':
        params.messages = [{ role: 'user', content: F.stop_prompt }];
        params.stop_sequences = [F.stop_sequence];
        break;
      case 'image':
        params.messages = [
          {
            role: 'user',
            content: [
              { type: 'text', text: F.image_prompt },
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: F.png_base64 } },
            ],
          },
        ];
        break;
      case 'temperature':
      case 'high_temperature':
        break;
      default:
        throw new NotApplicable(cell.case);
    }
    return params;
  }

  // Fields the pinned SDK (@anthropic-ai/sdk 1.x) does not model: `temperature`.
  extraBody(cell) {
    return ['temperature', 'high_temperature'].includes(cell.case) ? { temperature: temperatureOf(cell.case) } : null;
  }

  async send(cell) {
    const params = this.request(cell);
    if (cell.case === 'count_tokens') return this.countTokens(params);
    const client = cell.case === 'default_version' ? this.sdkDefault : this.client;
    return this.create(params, cell.stream, client, this.extraBody(cell));
  }

  async create(params, stream, client = this.client, extra = null) {
    const seen = newSeen();
    // An extra field goes in the request options' `body`, the SDK's way to send what it does
    // not model; that option stands for the whole body, so it carries the params too.
    const options = extra ? { body: { ...params, ...(stream ? { stream: true } : {}), ...extra } } : undefined;
    let message;
    if (stream) {
      const events = client.messages.stream(params, options);
      for await (const event of events) {
        if (event.type === 'content_block_delta' && event.delta.type === 'input_json_delta' && event.delta.partial_json) {
          seen.argumentDeltas += 1;
        }
      }
      message = await events.finalMessage();
    } else {
      message = await client.messages.create(params, options);
    }
    check(message.type === 'message' && message.role === 'assistant', 'not an assistant message');
    seen.model = message.model;
    const reasoning = [];
    for (const block of message.content) {
      if (block.type === 'text') {
        seen.text += block.text;
        seen.assistantBlocks.push({ type: 'text', text: block.text });
      } else if (block.type === 'thinking') {
        reasoning.push(block.thinking);
        seen.signature = block.signature;
        seen.assistantBlocks.push({ type: 'thinking', thinking: block.thinking, signature: block.signature });
      } else if (block.type === 'tool_use') {
        seen.toolCalls.push([block.id, block.name, JSON.stringify(block.input)]);
        seen.assistantBlocks.push({ type: 'tool_use', id: block.id, name: block.name, input: block.input });
      } else if (block.type === 'redacted_thinking') {
        seen.assistantBlocks.push({ type: 'redacted_thinking', data: block.data });
      }
    }
    seen.reasoning = reasoning.length ? reasoning.join('') : null;
    seen.stop =
      { end_turn: 'end', tool_use: 'tool_use', stop_sequence: 'stop_sequence', max_tokens: 'length' }[
        message.stop_reason
      ] ?? `other:${message.stop_reason}`;
    seen.stopSequence = message.stop_sequence;
    const usage = message.usage;
    seen.inputTokens =
      usage.input_tokens + (usage.cache_read_input_tokens ?? 0) + (usage.cache_creation_input_tokens ?? 0);
    seen.outputTokens = usage.output_tokens;
    return seen;
  }

  async countTokens(params) {
    const { max_tokens: _, ...rest } = params;
    const { data, response } = await this.client.messages.countTokens(rest).withResponse();
    const seen = newSeen();
    seen.model = params.model;
    seen.countedTokens = data.input_tokens;
    seen.estimatedHeader = response.headers.get('x-ci-token-count-estimated');
    return seen;
  }

  // The next turn, carrying the reply's thinking block (with its signature) back.
  roundTrip(cell, first, stream) {
    const params = this.request(cell);
    params.messages = [
      ...params.messages,
      { role: 'assistant', content: first.assistantBlocks },
      { role: 'user', content: F.round_trip_prompt },
    ];
    return this.create(params, stream);
  }
}

class CompletionsSurface {
  // A single text prompt: no system prompt, tools, reasoning or images.
  static CASES = new Set(['text', 'stop', 'temperature', 'high_temperature']);

  constructor(client, live) {
    this.client = client;
    this.live = live;
  }

  async send(cell) {
    const params = { model: cell.model, prompt: F.user_text };
    if (this.live) params.max_tokens = F.live_max_tokens;
    if (cell.case === 'stop') {
      params.prompt = F.stop_prompt;
      params.stop = [F.stop_sequence];
    } else if (cell.case === 'temperature' || cell.case === 'high_temperature') {
      params.temperature = temperatureOf(cell.case);
    } else if (cell.case !== 'text') {
      throw new NotApplicable(cell.case);
    }
    const seen = newSeen();
    let finish = null;
    let usage = null;
    if (cell.stream) {
      const chunks = await this.client.completions.create({
        ...params,
        stream: true,
        stream_options: { include_usage: true },
      });
      for await (const chunk of chunks) {
        check(chunk.object === 'text_completion', `chunk object is ${chunk.object}`);
        seen.model = chunk.model;
        seen.created = chunk.created;
        for (const choice of chunk.choices) {
          seen.text += choice.text;
          finish = choice.finish_reason ?? finish;
        }
        usage = chunk.usage ?? usage;
      }
    } else {
      const completion = await this.client.completions.create(params);
      check(completion.object === 'text_completion', `object is ${completion.object}`);
      check(completion.choices.length === 1, `expected one choice, got ${completion.choices.length}`);
      seen.model = completion.model;
      seen.created = completion.created;
      seen.text = completion.choices[0].text;
      finish = completion.choices[0].finish_reason;
      usage = completion.usage;
    }
    seen.stop = openaiStop(finish);
    if (usage) {
      seen.inputTokens = usage.prompt_tokens;
      seen.outputTokens = usage.completion_tokens;
    }
    return seen;
  }
}

// ---------------------------------------------------------------------------------------------
// Checks on what came back and, with the mock, on what the supplier received.
// ---------------------------------------------------------------------------------------------

function expectReply(cell, seen, live) {
  check(seen.model === cell.model, `model is ${JSON.stringify(seen.model)}, expected the public id ${cell.model}`);
  if (cell.case === 'count_tokens') {
    check(Number.isInteger(seen.countedTokens) && seen.countedTokens > 0, `input_tokens ${seen.countedTokens}`);
    check(seen.estimatedHeader === 'true', `x-ci-token-count-estimated is ${seen.estimatedHeader}, expected true`);
    return;
  }
  check(seen.inputTokens !== null && seen.outputTokens !== null, 'no usage');
  if (seen.created !== null) {
    check(Math.abs(seen.created - Date.now() / 1000) < 86400, `created timestamp ${seen.created} is not about now`);
  }
  if (live) return expectLive(cell, seen);
  check(
    seen.inputTokens === F.usage.prompt_tokens && seen.outputTokens === F.usage.completion_tokens,
    `usage is ${seen.inputTokens}/${seen.outputTokens}, the supplier reported ` +
      `${F.usage.prompt_tokens}/${F.usage.completion_tokens}`,
  );
  if (cell.case === 'tool_call') {
    check(seen.toolCalls.length === 1, `expected one tool call, got ${JSON.stringify(seen.toolCalls)}`);
    const [id, name, args] = seen.toolCalls[0];
    check(name === F.tool_name, `tool name ${name}`);
    if (cell.route === 'gemini') {
      // No ID on the wire: the codec numbers the reply's calls (router-gemini).
      check(id === F.gemini_first_call_id, `tool call id ${id}, expected ${F.gemini_first_call_id}`);
    } else {
      check(id === F.tool_call_id, `tool call id ${id}, the supplier sent ${F.tool_call_id}`);
    }
    check(deepEqual(JSON.parse(args), F.tool_arguments), `tool arguments ${args}`);
    check(seen.stop === 'tool_use', `stop reason ${seen.stop}, expected tool use`);
    check(seen.text.trim() === '', `unexpected text ${JSON.stringify(seen.text)}`);
    if (cell.stream && cell.route === 'gemini') {
      // Gemini streams a function call whole, in one chunk: one delta, not cut up.
      check(seen.argumentDeltas === 1, `the tool arguments arrived in ${seen.argumentDeltas} delta(s)`);
    } else if (cell.stream) {
      // The supplier streams the arguments in several fragments; they must not arrive as one.
      check(seen.argumentDeltas > 1, `the tool arguments arrived in ${seen.argumentDeltas} delta(s)`);
    }
    return;
  }
  check(seen.toolCalls.length === 0, `unexpected tool calls ${JSON.stringify(seen.toolCalls)}`);
  expectReasoningState(cell, seen);
  if (cell.case === 'tool_result') {
    check(seen.text === F.tool_result_reply, `text ${JSON.stringify(seen.text)}`);
    check(seen.stop === 'end', `stop reason ${seen.stop}`);
  } else if (cell.case === 'stop') {
    check(seen.text === F.stop_text, `text ${JSON.stringify(seen.text)}`);
    if (cell.inbound === 'messages' && dialect(cell.route) === 'messages') {
      check(seen.stop === 'stop_sequence', `stop reason ${seen.stop}, expected stop_sequence`);
      check(seen.stopSequence === F.stop_sequence, `stop_sequence ${seen.stopSequence}`);
    } else {
      check(['end', 'stop_sequence'].includes(seen.stop), `stop reason ${seen.stop}`);
    }
  } else {
    check(seen.text === F.reply_text, `text ${JSON.stringify(seen.text)}`);
    check(seen.stop === 'end', `stop reason ${seen.stop}`);
  }
  if (cell.case === 'thinking') {
    check(seen.reasoning === F.reasoning, `reasoning ${JSON.stringify(seen.reasoning)}, the supplier sent ${F.reasoning}`);
    if (cell.inbound === 'messages') {
      check(typeof seen.signature === 'string', 'the thinking block has no signature');
      if (dialect(cell.route) === 'messages') {
        check(seen.signature === F.signature, `signature ${seen.signature}, the supplier sent ${F.signature}`);
      } else {
        // No Anthropic signature exists on a converted route: the router issues its own.
        check(seen.signature !== '', 'a thinking block with an empty signature');
        check(seen.signature.startsWith('rtr1.'), `signature ${seen.signature} is not a router signature`);
      }
    }
  }
}

// Responses: the reasoning item carries the supplier's reasoning state to send back.
function expectReasoningState(cell, seen) {
  if (cell.case !== 'thinking' || cell.inbound !== 'responses') return;
  if (['responses', 'messages'].includes(dialect(cell.route))) {
    // A Responses supplier's `encrypted_content`, or a Messages supplier's thinking signature.
    check(
      seen.encryptedContent === F.signature,
      `encrypted_content ${JSON.stringify(seen.encryptedContent)}, the supplier sent ${F.signature}`,
    );
  }
}

function expectLive(cell, seen) {
  check(seen.inputTokens > 0 && seen.outputTokens > 0, `usage ${seen.inputTokens}/${seen.outputTokens}`);
  if (cell.case === 'tool_call') {
    check(seen.toolCalls.length > 0, 'no tool call, though the tool was forced');
    const [, name, args] = seen.toolCalls[0];
    check(name === F.tool_name, `tool name ${name}`);
    const parsed = JSON.parse(args);
    check(parsed && typeof parsed === 'object' && !Array.isArray(parsed), `tool arguments are not an object: ${args}`);
    check(seen.stop === 'tool_use', `stop reason ${seen.stop}`);
    return;
  }
  check(seen.text.trim() !== '' || seen.stop === 'length', 'no text');
  if (cell.case === 'stop') check(!seen.text.includes(F.stop_sequence), `the stop sequence is in the text ${seen.text}`);
  if (cell.case === 'thinking' && seen.signature !== null) check(seen.signature !== '', 'empty thinking signature');
}

function textOf(content) {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .filter((part) => part && typeof part === 'object')
      .map((part) => textOf(part.text ?? part.content ?? ''))
      .join('');
  }
  return '';
}

const asList = (value) => (Array.isArray(value) ? value : []);

// The dialect each route protocol speaks to the supplier: Claude on Bedrock is the Messages body
// (InvokeModel), Converse and Gemini have their own.
const DIALECTS = {
  chat: 'chat',
  responses: 'responses',
  messages: 'messages',
  bedrock_messages: 'messages',
  gemini: 'gemini',
  bedrock_converse: 'converse',
};
const dialect = (route) => DIALECTS[route];

// Where the route's dialect is called: fixed for the OpenAI and Messages endpoints; with the
// model in the path (and another method for a stream) for Gemini and Bedrock.
function upstreamPath(route, upstreamModel, stream) {
  let at = F.upstream_paths[route];
  if (at && typeof at === 'object') at = stream ? at.stream : at.json;
  return at.replace('{model}', upstreamModel);
}

// The conversation turns: Responses input items, Gemini contents, or messages.
function history(route, body) {
  const kind = dialect(route);
  const turns = kind === 'responses' ? body.input : kind === 'gemini' ? body.contents : body.messages;
  return asList(turns).filter((turn) => turn && typeof turn === 'object');
}

function partsOf(route, turn) {
  return asList(dialect(route) === 'gemini' ? turn.parts : turn.content).filter(
    (part) => part && typeof part === 'object',
  );
}

function assistantTurns(route, body) {
  const role = dialect(route) === 'gemini' ? 'model' : 'assistant';
  return history(route, body).filter((turn) => turn.role === role);
}

// The stop sequences (`what` = stop) or the temperature, where the dialect keeps them.
function upstreamSampling(route, body, what) {
  const kind = dialect(route);
  if (kind === 'gemini' || kind === 'converse') {
    const config = (kind === 'gemini' ? body.generationConfig : body.inferenceConfig) ?? {};
    return what === 'stop' ? config.stopSequences : config.temperature;
  }
  if (what === 'stop') return kind === 'messages' ? body.stop_sequences : body.stop;
  return body.temperature;
}

function upstreamSystem(route, body) {
  const kind = dialect(route);
  // Messages: a string or text blocks; Converse: a list of `{text}` blocks.
  if (kind === 'messages' || kind === 'converse') return textOf(body.system);
  if (kind === 'gemini') return textOf(body.systemInstruction?.parts);
  if (kind === 'responses') {
    return (
      textOf(body.instructions) +
      asList(body.input)
        .filter((item) => ['system', 'developer'].includes(item.role))
        .map((item) => textOf(item.content))
        .join('')
    );
  }
  return asList(body.messages)
    .filter((m) => ['system', 'developer'].includes(m.role))
    .map((m) => textOf(m.content))
    .join('');
}

function upstreamToolResult(route, body) {
  const kind = dialect(route);
  if (kind === 'chat') {
    const message = asList(body.messages).find((m) => m.role === 'tool');
    if (message) return [message.tool_call_id, textOf(message.content)];
  } else if (kind === 'responses') {
    const item = asList(body.input).find((i) => i && i.type === 'function_call_output');
    if (item) return [item.call_id, textOf(item.output)];
  } else if (kind === 'converse') {
    for (const turn of history(route, body)) {
      const block = partsOf(route, turn).find((b) => b.toolResult && typeof b.toolResult === 'object');
      if (block) return [block.toolResult.toolUseId, textOf(block.toolResult.content)];
    }
  } else {
    for (const turn of history(route, body)) {
      const block = partsOf(route, turn).find((b) => b.type === 'tool_result');
      if (block) return [block.tool_use_id, textOf(block.content)];
    }
  }
  return [null, ''];
}

function upstreamToolCallIds(route, body) {
  const kind = dialect(route);
  if (kind === 'chat') return asList(body.messages).flatMap((m) => asList(m.tool_calls).map((c) => c.id));
  if (kind === 'responses') {
    return asList(body.input)
      .filter((i) => i && i.type === 'function_call')
      .map((i) => i.call_id);
  }
  if (kind === 'converse') {
    return history(route, body).flatMap((turn) =>
      partsOf(route, turn)
        .filter((b) => b.toolUse && typeof b.toolUse === 'object')
        .map((b) => b.toolUse.toolUseId),
    );
  }
  return history(route, body).flatMap((turn) =>
    partsOf(route, turn)
      .filter((b) => b.type === 'tool_use')
      .map((b) => b.id),
  );
}

// The earlier call and its result, paired in the dialect's way: by ID, or on Gemini (whose calls
// carry none from the router) by the function's name.
function expectUpstreamToolResult(route, body) {
  const dump = JSON.stringify(body).slice(0, 400);
  if (dialect(route) === 'gemini') {
    const parts = history(route, body).flatMap((turn) => partsOf(route, turn));
    const calls = parts.filter((p) => p.functionCall && typeof p.functionCall === 'object').map((p) => p.functionCall);
    check(calls.length === 1, `upstream functionCall parts: ${dump}`);
    check(calls[0].name === F.tool_name, `upstream functionCall: ${JSON.stringify(calls[0])}`);
    check(deepEqual(calls[0].args, F.previous_arguments), `upstream functionCall args: ${JSON.stringify(calls[0])}`);
    const responses = parts
      .filter((p) => p.functionResponse && typeof p.functionResponse === 'object')
      .map((p) => p.functionResponse);
    check(responses.length === 1, `upstream functionResponse parts: ${dump}`);
    check(responses[0].name === F.tool_name, `upstream functionResponse: ${JSON.stringify(responses[0])}`);
    check(responses[0].response?.output === F.tool_result, `upstream functionResponse.response: ${JSON.stringify(responses[0])}`);
    return;
  }
  const [id, result] = upstreamToolResult(route, body);
  check(id === F.previous_call_id, `tool result id upstream is ${id}`);
  check(result.includes(F.tool_result), `tool result upstream is ${JSON.stringify(result)}`);
  check(upstreamToolCallIds(route, body).includes(F.previous_call_id), `no earlier tool call upstream: ${dump}`);
}

// The tool definition in the route's dialect, its schema unchanged.
function expectUpstreamTool(cell, body) {
  const kind = dialect(cell.route);
  if (kind === 'gemini') {
    const declarations = asList(body.tools).flatMap((tool) => asList(tool.functionDeclarations));
    check(declarations.length === 1, `upstream functionDeclarations: ${JSON.stringify(body.tools).slice(0, 400)}`);
    const tool = declarations[0];
    const shown = JSON.stringify(tool);
    check(tool.name === F.tool_name, `upstream tool: ${shown}`);
    check(tool.description === F.tool_description, `upstream tool description: ${shown}`);
    // A JSON Schema goes as `parametersJsonSchema` (`parameters` is Google's OpenAPI subset).
    check(deepEqual(tool.parametersJsonSchema, F.tool_schema), `upstream tool parametersJsonSchema: ${shown}`);
    return;
  }
  if (kind === 'converse') {
    const tools = asList(body.toolConfig?.tools);
    check(tools.length === 1, `upstream toolConfig.tools: ${JSON.stringify(tools).slice(0, 400)}`);
    const spec = tools[0].toolSpec ?? {};
    const shown = JSON.stringify(spec);
    check(spec.name === F.tool_name, `upstream toolSpec: ${shown}`);
    check(spec.description === F.tool_description, `upstream toolSpec description: ${shown}`);
    check(deepEqual(spec.inputSchema, { json: F.tool_schema }), `upstream toolSpec inputSchema: ${shown}`);
    return;
  }
  const tools = asList(body.tools);
  check(tools.length === 1, `upstream tools: ${JSON.stringify(tools).slice(0, 400)}`);
  const tool = tools[0];
  const shown = JSON.stringify(tool);
  // A Responses client said `strict: false`; the others said nothing. A converted tool keeps
  // the non-strict meaning: a Responses supplier reads an absent `strict` as true, so it is
  // sent false there explicitly; Chat reads absent as false.
  const strict = cell.inbound === 'responses' || kind === 'responses' ? false : undefined;
  if (kind === 'chat') {
    const fn = tool.function ?? {};
    check(tool.type === 'function' && fn.name === F.tool_name, `upstream tool: ${shown}`);
    check(fn.description === F.tool_description, `upstream tool description: ${shown}`);
    check(deepEqual(fn.parameters, F.tool_schema), `upstream tool parameters: ${shown}`);
    check(fn.strict === strict, `upstream tool strict ${fn.strict}, expected ${strict}`);
  } else if (kind === 'responses') {
    check(tool.type === 'function' && tool.name === F.tool_name, `upstream tool: ${shown}`);
    check(tool.description === F.tool_description, `upstream tool description: ${shown}`);
    check(deepEqual(tool.parameters, F.tool_schema), `upstream tool parameters: ${shown}`);
    check(tool.strict === strict, `upstream tool strict ${tool.strict}, expected ${strict}`);
  } else {
    check(tool.name === F.tool_name, `upstream tool: ${shown}`);
    check(tool.description === F.tool_description, `upstream tool description: ${shown}`);
    check(deepEqual(tool.input_schema, F.tool_schema), `upstream tool input_schema: ${shown}`);
    check(!('parameters' in tool) && !('function' in tool), `upstream tool not in Messages form: ${shown}`);
  }
}

// [media type, base64 data] of a `data:<type>;base64,<data>` URL.
function dataUrl(url) {
  if (typeof url !== 'string' || !url.startsWith('data:') || !url.includes(';base64,')) return [null, null];
  const at = url.indexOf(';base64,');
  return [url.slice('data:'.length, at), url.slice(at + ';base64,'.length)];
}

// One image part in the user turn, in the route's own form, with its media type.
function expectUpstreamImage(route, body) {
  const kind = dialect(route);
  const turns = history(route, body).filter((turn) => turn.role === 'user');
  check(turns.length === 1, `upstream user turns: ${JSON.stringify(turns).slice(0, 400)}`);
  const parts = partsOf(route, turns[0]);
  check(parts.length > 0, `upstream user content is not a list of parts: ${JSON.stringify(turns[0]).slice(0, 400)}`);
  let image;
  let mediaType;
  let data;
  let prompts;
  if (kind === 'gemini') {
    const images = parts.filter((p) => p.inlineData && typeof p.inlineData === 'object').map((p) => p.inlineData);
    check(images.length === 1, `expected one \`inlineData\` part upstream: ${JSON.stringify(parts).slice(0, 400)}`);
    image = images[0];
    [mediaType, data] = [image.mimeType, image.data];
    prompts = parts.filter((p) => 'text' in p).map((p) => p.text);
  } else if (kind === 'converse') {
    // An image block: its format by name, its bytes base64 in JSON.
    const images = parts.filter((p) => p.image && typeof p.image === 'object').map((p) => p.image);
    check(images.length === 1, `expected one \`image\` block upstream: ${JSON.stringify(parts).slice(0, 400)}`);
    image = images[0];
    mediaType = typeof image.format === 'string' ? `image/${image.format}` : null;
    data = image.source?.bytes;
    prompts = parts.filter((p) => 'text' in p).map((p) => p.text);
  } else {
    const type = { chat: 'image_url', responses: 'input_image', messages: 'image' }[kind];
    const images = parts.filter((part) => part.type === type);
    check(images.length === 1, `expected one \`${type}\` part upstream: ${JSON.stringify(parts).slice(0, 400)}`);
    image = images[0];
    if (kind === 'chat') {
      [mediaType, data] = dataUrl(image.image_url?.url);
    } else if (kind === 'responses') {
      [mediaType, data] = dataUrl(image.image_url);
    } else {
      check(image.source?.type === 'base64', `upstream image source: ${JSON.stringify(image).slice(0, 200)}`);
      [mediaType, data] = [image.source.media_type, image.source.data];
    }
    const text = { chat: 'text', responses: 'input_text', messages: 'text' }[kind];
    prompts = parts.filter((part) => part.type === text).map((part) => part.text);
  }
  const shown = JSON.stringify(image).slice(0, 200);
  check(mediaType === 'image/png', `upstream image media type ${mediaType}: ${shown}`);
  check(data === F.png_base64, `upstream image data differs: ${shown}`);
  check(deepEqual(prompts, [F.image_prompt]), `upstream text beside the image: ${JSON.stringify(prompts)}`);
}

// Responses: the reasoning state the client sent back reaches the supplier on the next turn,
// in the route's form; a Chat or Gemini supplier takes none, and the router documents dropping it.
function expectUpstreamReasoningState(cell, calls) {
  if (cell.inbound !== 'responses') return;
  const body = calls[1].body;
  const dump = JSON.stringify(body).slice(0, 600);
  const kind = dialect(cell.route);
  if (kind === 'responses') {
    const items = asList(body.input).filter((item) => item && item.type === 'reasoning');
    check(items.length === 1, `no reasoning item sent back upstream: ${dump}`);
    check(items[0].encrypted_content === F.signature, `encrypted_content sent back upstream: ${JSON.stringify(items[0])}`);
    const summary = asList(items[0].summary)
      .map((part) => part.text ?? '')
      .join('');
    check(summary === F.reasoning, `reasoning summary sent back upstream: ${JSON.stringify(items[0])}`);
  } else if (kind === 'messages') {
    const blocks = assistantTurns(cell.route, body)
      .flatMap((turn) => partsOf(cell.route, turn))
      .filter((b) => b.type === 'thinking');
    check(blocks.length === 1, `no thinking block sent back upstream: ${dump}`);
    check(blocks[0].signature === F.signature, `signature sent back upstream: ${JSON.stringify(blocks[0])}`);
    check(blocks[0].thinking === F.reasoning, `thinking sent back upstream: ${JSON.stringify(blocks[0])}`);
  } else {
    const assistant = assistantTurns(cell.route, body);
    check(assistant.length === 1, `no assistant turn upstream: ${dump}`);
    if (kind === 'gemini') {
      const parts = partsOf(cell.route, assistant[0]);
      check(!parts.some((p) => p.thought), `a thought sent back to Gemini: ${JSON.stringify(parts)}`);
      check(textOf(parts) === F.reply_text, `model turn upstream: ${JSON.stringify(assistant[0])}`);
    } else {
      check(textOf(assistant[0].content) === F.reply_text, `assistant turn upstream: ${JSON.stringify(assistant[0])}`);
      check(
        !Object.keys(assistant[0]).some((key) => key.startsWith('reasoning') || key === 'thinking'),
        `a Chat supplier was sent reasoning history: ${JSON.stringify(assistant[0])}`,
      );
    }
  }
  const turns = history(cell.route, body);
  const last = turns[turns.length - 1];
  const content = kind === 'gemini' ? partsOf(cell.route, last ?? {}) : last?.content;
  check(textOf(content) === F.round_trip_prompt, `last turn upstream: ${JSON.stringify(last)}`);
}

function expectUpstream(cell, calls, requests) {
  check(calls.length === requests, `the supplier got ${calls.length} calls, expected ${requests}`);
  if (!calls.length) return;
  const expectedPath = upstreamPath(cell.route, cell.upstreamModel, cell.stream);
  for (const call of calls) {
    check(
      call.path === expectedPath,
      `the supplier was called at ${call.path}, not the ${cell.route} endpoint ${expectedPath}`,
    );
    if (cell.route === 'bedrock_messages') {
      // InvokeModel: the model and the streaming choice are in the path, the version in the body.
      check(
        call.body.anthropic_version === F.bedrock_anthropic_version,
        `anthropic_version upstream is ${JSON.stringify(call.body.anthropic_version)}`,
      );
      check(!('model' in call.body) && !('stream' in call.body), `model or stream in a Bedrock body: ${Object.keys(call.body)}`);
    }
  }
  const body = calls[0].body;
  const dump = JSON.stringify(body);
  switch (cell.case) {
    case 'system':
      check(upstreamSystem(cell.route, body).includes(F.system_text), `no system prompt upstream: ${dump.slice(0, 400)}`);
      break;
    case 'tool_call':
      expectUpstreamTool(cell, body);
      break;
    case 'tool_result':
      expectUpstreamToolResult(cell.route, body);
      break;
    case 'stop': {
      const value = upstreamSampling(cell.route, body, 'stop');
      check(
        deepEqual(value, [F.stop_sequence]) || value === F.stop_sequence,
        `upstream stop sequences are ${JSON.stringify(value)}: ${dump.slice(0, 400)}`,
      );
      break;
    }
    case 'image':
      expectUpstreamImage(cell.route, body);
      break;
    case 'temperature':
    case 'high_temperature': {
      const value = upstreamSampling(cell.route, body, 'temperature');
      check(value === temperatureOf(cell.case), `upstream temperature ${value}, sent ${temperatureOf(cell.case)}`);
      break;
    }
    case 'thinking':
      expectUpstreamThinking(cell, calls);
      expectUpstreamReasoningState(cell, calls);
      break;
    default:
      check(dump.includes(F.user_text), "the user's text did not reach the supplier");
  }
}

function expectUpstreamThinking(cell, calls) {
  const body = calls[0].body;
  const kind = dialect(cell.route);
  if (cell.inbound === 'messages') {
    // The budget reaches the supplier as sent, converted routes included (a Chat supplier gets
    // the `thinking` object as is, GP-50; a Responses route refuses it, GP-74), in the dialect's
    // own field: Gemini's `thinkingConfig` (thoughts included, to be shown), Converse's
    // `additionalModelRequestFields` (as Claude reads it).
    const expected = { type: 'enabled', budget_tokens: F.thinking_budget };
    if (kind === 'gemini') {
      const config = body.generationConfig?.thinkingConfig;
      const wanted = { includeThoughts: true, thinkingBudget: F.thinking_budget };
      check(deepEqual(config, wanted), `upstream thinkingConfig ${JSON.stringify(config)}, expected ${JSON.stringify(wanted)}`);
    } else if (kind === 'converse') {
      const extra = body.additionalModelRequestFields ?? {};
      check(deepEqual(extra.thinking, expected), `upstream additionalModelRequestFields ${JSON.stringify(extra)}`);
    } else {
      check(
        deepEqual(body.thinking, expected),
        `upstream thinking ${JSON.stringify(body.thinking)}, expected ${JSON.stringify(expected)}`,
      );
    }
    const second = calls[1].body;
    check(!JSON.stringify(second).includes('rtr1.'), 'a router signature reached the supplier');
    const assistant = assistantTurns(cell.route, second);
    check(assistant.length === 1, `the assistant turn did not reach the supplier: ${JSON.stringify(second).slice(0, 400)}`);
    if (kind === 'chat') {
      // The router's signature round-tripped (the second turn succeeded); a Chat supplier has
      // no field for reasoning history, so none reaches it, and no router signature.
      check(
        !Object.keys(assistant[0]).some((key) => key.startsWith('reasoning') || key === 'thinking'),
        `reasoning history sent to a Chat supplier: ${JSON.stringify(assistant[0])}`,
      );
    } else if (kind === 'gemini') {
      // Gemini takes no thought text back (router-gemini): the model turn is the text only.
      const parts = partsOf(cell.route, assistant[0]);
      check(!parts.some((p) => p.thought), `a thought sent back to Gemini: ${JSON.stringify(parts)}`);
      check(textOf(parts) === F.reply_text, `model turn upstream: ${JSON.stringify(assistant[0])}`);
    } else if (kind === 'converse') {
      // The router's seal held Converse's own signature: it goes back as reasoningContent.
      const blocks = partsOf(cell.route, assistant[0])
        .filter((p) => p.reasoningContent)
        .map((p) => p.reasoningContent.reasoningText ?? {});
      check(blocks.length > 0, `the reasoning was not sent back to the supplier: ${JSON.stringify(assistant[0])}`);
      check(blocks[0].signature === F.signature, `signature sent back upstream: ${JSON.stringify(blocks[0])}`);
      check(blocks[0].text === F.reasoning, `reasoning sent back upstream: ${JSON.stringify(blocks[0])}`);
    } else {
      // The second turn carries the thinking block back, signature intact.
      const blocks = partsOf(cell.route, assistant[0]).filter((b) => b.type === 'thinking');
      check(blocks.length > 0, 'the thinking block was not sent back to the supplier');
      check(blocks[0].signature === F.signature, `signature sent back upstream: ${JSON.stringify(blocks[0])}`);
      check(blocks[0].thinking === F.reasoning, `thinking sent back upstream: ${JSON.stringify(blocks[0])}`);
    }
    return;
  }
  // An explicit effort travels in the route's own field (B-16, C-08, GP-74); Gemini has none and
  // takes the budget it stands for (router-gemini: low = 1024, as Google's own OpenAI-compatible
  // endpoint maps it).
  if (kind === 'gemini') {
    const config = body.generationConfig?.thinkingConfig ?? {};
    check(config.thinkingBudget === 1024, `upstream thinkingConfig ${JSON.stringify(config)} for effort low`);
    return;
  }
  const effort =
    kind === 'chat' ? body.reasoning_effort : kind === 'responses' ? body.reasoning?.effort : body.output_config?.effort;
  check(effort === 'low', `upstream effort is ${JSON.stringify(effort)}: ${JSON.stringify(body).slice(0, 400)}`);
}

// ---------------------------------------------------------------------------------------------
// Running the matrix.
// ---------------------------------------------------------------------------------------------

// `STATUS CODE` for an HTTP error the SDK raised: the OpenAI `code`, the Messages `error.type`.
function refusal(error) {
  if (error instanceof OpenAI.APIError && typeof error.status === 'number') {
    return `${error.status} ${error.code ?? error.error?.type ?? 'no_code'}`;
  }
  if (error instanceof Anthropic.APIError && typeof error.status === 'number') {
    return `${error.status} ${error.error?.error?.type ?? 'no_type'}`;
  }
  return null;
}

// The error's `param`: the OpenAI SDK lifts it out of the envelope; Messages has none.
function errorParam(error) {
  if (error instanceof OpenAI.APIError) return typeof error.param === 'string' ? error.param : null;
  const param = error.error?.error?.param;
  return typeof param === 'string' ? param : null;
}

function errorMessage(error) {
  const body = error.error;
  const inner = body && typeof body.error === 'object' ? body.error : body;
  return typeof inner?.message === 'string' ? inner.message : String(error.message ?? error);
}

function applicable(cell, surface) {
  return surface.constructor.CASES.has(cell.case) && !(cell.case === 'count_tokens' && cell.stream);
}

async function runCell(cell, surface, mock) {
  const live = mock === null;
  if (!applicable(cell, surface)) return { outcome: 'n/a' };
  const roundTrip = cell.case === 'thinking' && ['messages', 'responses'].includes(cell.inbound);
  const requests = cell.case === 'count_tokens' ? 0 : roundTrip ? 2 : 1;
  if (mock) {
    try {
      await mock.reset();
      await mock.push(cell.upstreamModel, scriptedReply(cell));
      if (roundTrip) await mock.push(cell.upstreamModel, { text: F.round_trip_reply, usage: F.usage });
    } catch (error) {
      return { outcome: 'fail', detail: `could not script the mock supplier: ${error.message}` };
    }
  }
  try {
    const seen = await surface.send(cell);
    expectReply(cell, seen, live);
    if (roundTrip) {
      const second = await surface.roundTrip(cell, seen, cell.stream);
      if (!live) check(second.text === F.round_trip_reply, `second turn text ${JSON.stringify(second.text)}`);
    }
  } catch (error) {
    if (error instanceof NotApplicable) return { outcome: 'n/a' };
    if (error instanceof CheckFailed) return { outcome: 'fail', detail: error.message };
    const outcome = refusal(error);
    if (outcome === null) {
      return { outcome: 'fail', detail: `${error.constructor?.name ?? 'Error'}: ${error.message}` };
    }
    const detail = errorMessage(error);
    if (mock && (await mock.calls(cell.upstreamModel)).length) {
      return { outcome: 'fail', detail: `refused with ${outcome} after calling the supplier: ${detail}` };
    }
    return { outcome, detail, param: errorParam(error), message: detail };
  }
  if (mock) {
    try {
      expectUpstream(cell, await mock.calls(cell.upstreamModel), requests);
    } catch (error) {
      return { outcome: 'fail', detail: `upstream: ${error.message}` };
    }
  }
  return { outcome: 'pass' };
}

function parseModels(text, routes) {
  if (!text) return Object.fromEntries(Object.entries(routes).map(([route, spec]) => [route, spec.model]));
  const models = {};
  for (const pair of text.split(',')) {
    const [route, model] = pair.split('=');
    if (!(route in routes) || !model) {
      throw new Error(`--models: expected ROUTE=MODEL with ROUTE in ${Object.keys(routes)}, got ${pair}`);
    }
    models[route] = model;
  }
  return models;
}

async function main() {
  const { values: args } = parseArgs({
    options: {
      matrix: { type: 'string' },
      results: { type: 'string' },
      'base-url': { type: 'string' },
      'api-key': { type: 'string' },
      'mock-url': { type: 'string' },
      models: { type: 'string' },
      only: { type: 'string' },
    },
  });
  const apiKey = args['api-key'] ?? process.env.CONFORMANCE_API_KEY;
  for (const [name, value] of [
    ['--matrix', args.matrix],
    ['--results', args.results],
    ['--base-url', args['base-url']],
    ['--api-key or CONFORMANCE_API_KEY', apiKey],
  ]) {
    if (!value) throw new Error(`${name} is required`);
  }
  const matrix = JSON.parse(fs.readFileSync(args.matrix, 'utf8'));
  const models = parseModels(args.models, matrix.routes);
  const mock = args['mock-url'] ? new Mock(args['mock-url']) : null;
  const live = mock === null;
  const base = args['base-url'].replace(/\/+$/, '');
  const openai = new OpenAI({ apiKey, baseURL: `${base}/v1`, maxRetries: 0, timeout: 60_000 });
  const anthropic = new Anthropic({
    apiKey,
    baseURL: base,
    maxRetries: 0,
    timeout: 60_000,
    defaultHeaders: { 'anthropic-version': F.anthropic_version },
  });
  const anthropicSdkDefault = new Anthropic({ apiKey, baseURL: base, maxRetries: 0, timeout: 60_000 });
  const surfaces = {
    chat: () => new ChatSurface(openai, live),
    responses: () => new ResponsesSurface(openai, live),
    messages: () => new MessagesSurface(anthropic, anthropicSdkDefault, live),
    completions: () => new CompletionsSurface(openai, live),
  };
  const out = fs.openSync(args.results, 'w');
  try {
    for (const inbound of matrix.inbound) {
      const surface = surfaces[inbound]();
      for (const caseName of matrix.clients[CLIENT]) {
        for (const [route, spec] of Object.entries(matrix.routes)) {
          for (const stream of [false, true]) {
            const cell = {
              inbound,
              route,
              stream,
              case: caseName,
              model: models[route] ?? '',
              upstreamModel: spec.upstream_model,
            };
            const id = `${inbound}/${caseName}/${route}/${stream ? 'stream' : 'json'}`;
            if (args.only && !id.includes(args.only)) continue;
            const started = performance.now();
            const result =
              cell.model || !applicable(cell, surface)
                ? await runCell(cell, surface, mock)
                : { outcome: 'skip', detail: 'no model given for this route' };
            const record = {
              client: CLIENT,
              inbound,
              route,
              stream,
              case: caseName,
              seconds: Math.round(performance.now() - started) / 1000,
              ...result,
            };
            fs.writeSync(out, `${JSON.stringify(record)}\n`);
            if (result.outcome === 'fail') console.error(`conformance[${CLIENT}] ${id}: ${result.detail}`);
          }
        }
      }
    }
  } finally {
    fs.closeSync(out);
  }
}

main().catch((error) => {
  console.error(`conformance[${CLIENT}]: ${error.stack ?? error}`);
  process.exit(1);
});
