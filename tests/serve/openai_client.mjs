// The official `openai` npm client against a running `computed serve`, for
// tests/serve/openai_client_test.cc. What a real client sees: its own request
// building, SSE parsing and error classes, not a hand-written HTTP client.
//
//   node openai_client.mjs BASE_URL API_KEY CALL REQUEST_JSON [EXPECT_STATUS]
//
// BASE_URL is the server's root (http://127.0.0.1:PORT); API_KEY may be "".
// CALL is one of
//   chat         chat.completions.create, once as sent and once streamed;
//   completions  completions.create, likewise;
//   models       models.list (REQUEST_JSON ignored);
//   responses    responses.create, once as sent and once through
//                responses.stream (the event types in order, the text and
//                reasoning deltas joined, each function call's arguments,
//                and the SDK's finalResponse());
//   error        chat.completions.create, which must throw an APIError with
//                status EXPECT_STATUS (and REQUEST_JSON may name the endpoint
//                as {"endpoint": "completions" | "responses", ...}).
// Prints one JSON object; any other outcome exits non-zero with a message.

import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

// The client installed by tests/npm/install.sh (node looks for packages beside
// the script, not in tests/npm).
const require = createRequire(new URL('../npm/package.json', import.meta.url));
const { default: OpenAI } = await import(pathToFileURL(require.resolve('openai')).href);

const [baseUrl, apiKey, call, requestJson = '{}', expectStatus] = process.argv.slice(2);
if (!baseUrl || apiKey === undefined || !call) {
  console.error('usage: openai_client.mjs BASE_URL API_KEY CALL REQUEST_JSON [EXPECT_STATUS]');
  process.exit(2);
}
const request = JSON.parse(requestJson);
// No retries: a 5xx must fail the test at once, not be hidden by a second try.
const client = new OpenAI({
  baseURL: baseUrl + '/v1', apiKey: apiKey || 'no-key', maxRetries: 0, timeout: 60_000,
});

function fail(message) {
  console.error('openai_client.mjs: ' + message);
  process.exit(1);
}

// A streamed chat completion, folded the way clients fold it: deltas joined,
// tool-call fragments merged by index.
async function streamChat(body) {
  const stream = await client.chat.completions.create({
    ...body, stream: true, stream_options: { include_usage: true },
  });
  const out = { content: '', reasoning_content: '', tool_calls: [], chunks: 0, roles: [] };
  for await (const chunk of stream) {
    ++out.chunks;
    if (chunk.object !== 'chat.completion.chunk') fail('chunk object ' + chunk.object);
    if (chunk.usage) out.usage = chunk.usage;
    if (chunk.warp) out.warp = chunk.warp;
    for (const choice of chunk.choices) {
      const delta = choice.delta || {};
      if (delta.role) out.roles.push(delta.role);
      if (delta.content) out.content += delta.content;
      if (delta.reasoning_content) out.reasoning_content += delta.reasoning_content;
      for (const call of delta.tool_calls || []) {
        const merged = out.tool_calls[call.index] ??=
            { id: '', type: 'function', function: { name: '', arguments: '' } };
        if (call.id) merged.id = call.id;
        if (call.function?.name) merged.function.name += call.function.name;
        if (call.function?.arguments) merged.function.arguments += call.function.arguments;
      }
      if (choice.finish_reason) out.finish_reason = choice.finish_reason;
    }
  }
  return out;
}

async function streamCompletion(body) {
  const stream = await client.completions.create({ ...body, stream: true });
  const out = { text: '', chunks: 0 };
  for await (const chunk of stream) {
    ++out.chunks;
    for (const choice of chunk.choices) {
      out.text += choice.text;
      if (choice.finish_reason) out.finish_reason = choice.finish_reason;
    }
  }
  return out;
}

// A streamed response, through the SDK's ResponseStream.
async function streamResponse(body) {
  const stream = client.responses.stream(body);
  const out = { events: [], text: '', reasoning: '', calls: [], sequence: [] };
  for await (const event of stream) {
    out.events.push(event.type);
    out.sequence.push(event.sequence_number);
    if (event.type === 'response.output_text.delta') out.text += event.delta;
    if (event.type === 'response.reasoning_text.delta') out.reasoning += event.delta;
    if (event.type === 'response.function_call_arguments.done') out.calls.push(event.arguments);
    if (event.type === 'response.completed' || event.type === 'response.incomplete') {
      out.status = event.response.status;
      out.usage = event.response.usage;
    }
  }
  // finalResponse() carries no output_text (responses.create's helper): joined here.
  out.final = await stream.finalResponse();
  out.final_text = out.final.output.filter((item) => item.type === 'message')
      .flatMap((item) => item.content).filter((part) => part.type === 'output_text')
      .map((part) => part.text).join('');
  return out;
}

async function main() {
  switch (call) {
    case 'chat': {
      const completion = await client.chat.completions.create(request);
      const streamed = await streamChat(request);
      return { completion, streamed };
    }
    case 'completions': {
      const completion = await client.completions.create(request);
      const streamed = await streamCompletion(request);
      return { completion, streamed };
    }
    case 'responses': {
      const response = await client.responses.create(request);
      const streamed = await streamResponse(request);
      return { response: { ...response, output_text: response.output_text }, streamed };
    }
    case 'models': {
      const ids = [];
      for await (const model of client.models.list()) ids.push(model.id);
      return { ids };
    }
    case 'error': {
      const { endpoint = 'chat', ...body } = request;
      try {
        if (endpoint === 'completions') await client.completions.create(body);
        else if (endpoint === 'responses') await client.responses.create(body);
        else await client.chat.completions.create(body);
      } catch (e) {
        if (!(e instanceof OpenAI.APIError)) fail('not an APIError: ' + e);
        if (String(e.status) !== expectStatus) {
          fail(`status ${e.status}, expected ${expectStatus}: ${e.message}`);
        }
        // The client's subclass for the status, and the error body's fields.
        return { class: e.constructor.name, status: e.status, type: e.type, code: e.code,
                 param: e.param, message: e.message };
      }
      fail(`no error, expected status ${expectStatus}`);
    }
    default:
      fail('unknown call ' + call);
  }
}

main().then((result) => console.log(JSON.stringify(result)))
    .catch((e) => fail(e.stack || String(e)));
