// The official `@anthropic-ai/sdk` npm client against a running `computed
// serve`, for tests/serve/anthropic_client_test.cc: its own request building,
// SSE parsing, stream accumulation and error classes.
//
//   node anthropic_client.mjs BASE_URL API_KEY CALL REQUEST_JSON [EXPECT_STATUS]
//
// CALL is one of
//   messages   messages.create, once as sent and once streamed (the raw event
//              types in order, the text and thinking deltas joined, tool_use
//              inputs from input_json_delta, and the SDK's finalMessage());
//   count      messages.countTokens;
//   error      messages.create, which must throw an APIError with status
//              EXPECT_STATUS.
// Prints one JSON object; any other outcome exits non-zero with a message.

import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const require = createRequire(new URL('../npm/package.json', import.meta.url));
const sdk = await import(pathToFileURL(require.resolve('@anthropic-ai/sdk')).href);
const Anthropic = sdk.default;

const [baseUrl, apiKey, call, requestJson = '{}', expectStatus] = process.argv.slice(2);
if (!baseUrl || apiKey === undefined || !call) {
  console.error('usage: anthropic_client.mjs BASE_URL API_KEY CALL REQUEST_JSON [EXPECT_STATUS]');
  process.exit(2);
}
const request = JSON.parse(requestJson);
// No retries: a 5xx must fail the test at once, not be hidden by a second try.
const client = new Anthropic({
  baseURL: baseUrl, apiKey: apiKey || 'no-key', maxRetries: 0, timeout: 60_000,
});

function fail(message) {
  console.error('anthropic_client.mjs: ' + message);
  process.exit(1);
}

// A streamed message: the raw events as they came (types, in order), folded
// the way a client folds them, and the SDK's own accumulation of the stream.
async function streamMessage(body) {
  const stream = client.messages.stream(body);
  const out = { events: [], text: '', thinking: '', tool_uses: [], blocks: [] };
  const partial = {};
  for await (const event of stream) {
    out.events.push(event.type);
    switch (event.type) {
      case 'message_start':
        out.start_usage = event.message.usage;
        out.id = event.message.id;
        break;
      case 'content_block_start':
        out.blocks[event.index] = event.content_block.type;
        if (event.content_block.type === 'tool_use') {
          partial[event.index] = '';
          out.tool_uses[event.index] = { id: event.content_block.id, name: event.content_block.name };
        }
        break;
      case 'content_block_delta':
        if (event.delta.type === 'text_delta') out.text += event.delta.text;
        if (event.delta.type === 'thinking_delta') out.thinking += event.delta.thinking;
        if (event.delta.type === 'input_json_delta') partial[event.index] += event.delta.partial_json;
        break;
      case 'content_block_stop':
        if (event.index in partial) out.tool_uses[event.index].input = JSON.parse(partial[event.index]);
        break;
      case 'message_delta':
        out.stop_reason = event.delta.stop_reason;
        out.stop_sequence = event.delta.stop_sequence;
        out.output_tokens = event.usage.output_tokens;
        break;
    }
  }
  out.tool_uses = out.tool_uses.filter(Boolean);
  out.final = await stream.finalMessage();
  return out;
}

try {
  if (call === 'messages') {
    const message = await client.messages.create(request);
    const streamed = await streamMessage(request);
    console.log(JSON.stringify({ message, streamed }));
  } else if (call === 'count') {
    console.log(JSON.stringify(await client.messages.countTokens(request)));
  } else if (call === 'error') {
    try {
      await client.messages.create(request);
    } catch (error) {
      if (!(error instanceof Anthropic.APIError)) fail('not an APIError: ' + error);
      if (String(error.status) !== expectStatus) {
        fail(`status ${error.status}, expected ${expectStatus}: ${error.message}`);
      }
      console.log(JSON.stringify({
        class: error.constructor.name, status: error.status, type: error.error?.error?.type,
        message: error.error?.error?.message, body_type: error.error?.type,
      }));
      process.exit(0);
    }
    fail('the request succeeded; expected status ' + expectStatus);
  } else {
    fail('unknown call ' + call);
  }
} catch (error) {
  fail(`${call}: ${error.constructor.name}: ${error.message}`);
}
