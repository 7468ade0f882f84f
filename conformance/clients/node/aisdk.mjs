// One AI SDK cell of `cargo xtask clients` (conformance/clients/clients.py runs it and checks
// the result): `node aisdk.mjs PROVIDER CASE MODEL` with CLIENTS_BASE_URL and CLIENTS_API_KEY
// in the environment; prints `{"got": ...}` (the text, or the parsed object) as one JSON line.
//
// PROVIDER: `openai-chat` (openai.chat()), `openai-responses` (openai(), the Responses API,
// with the provider option `store: false`), `anthropic` (anthropic(), whose tools carry
// `eager_input_streaming`).
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { generateObject, generateText, stepCountIs, streamText, tool } from 'ai';
import { z } from 'zod';

const [provider, testCase, modelId] = process.argv.slice(2);
const base = process.env.CLIENTS_BASE_URL.replace(/\/$/, '');
const apiKey = process.env.CLIENTS_API_KEY;
const f = JSON.parse(process.env.CLIENTS_FIXTURES);

const model = {
  'openai-chat': () => createOpenAI({ baseURL: `${base}/v1`, apiKey }).chat(modelId),
  'openai-responses': () => createOpenAI({ baseURL: `${base}/v1`, apiKey })(modelId),
  anthropic: () => createAnthropic({ baseURL: `${base}/v1`, apiKey })(modelId),
}[provider]();
// The router keeps no responses: the Responses provider must not refer to stored items.
const providerOptions = provider === 'openai-responses' ? { openai: { store: false } } : undefined;
const common = { model, maxOutputTokens: f.max_tokens, maxRetries: 0, providerOptions };

const weather = tool({
  description: 'Current weather for a city.',
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => {
    ran.push(city);
    return f.tool_result;
  },
});
const ran = [];

let got;
if (testCase === 'text') {
  got = (await generateText({ ...common, prompt: f.prompt })).text;
} else if (testCase === 'stream') {
  const result = streamText({ ...common, prompt: f.prompt });
  got = '';
  for await (const delta of result.textStream) got += delta;
} else if (testCase === 'tool') {
  const result = streamText({
    ...common,
    prompt: f.tool_prompt,
    tools: { [f.tool_name]: weather },
    stopWhen: stepCountIs(3),
  });
  got = '';
  for await (const delta of result.textStream) got += delta;
  if (ran.join() !== 'Paris') throw new Error(`the tool ran for ${JSON.stringify(ran)}`);
} else if (testCase === 'structured') {
  const result = await generateObject({
    ...common,
    prompt: f.prompt,
    schema: z.object({ city: z.string(), temperature: z.number().int() }),
  });
  got = result.object;
} else {
  throw new Error(`unknown case ${testCase}`);
}
console.log(JSON.stringify({ got }));
