#include "computed/serve/chat_page.h"

namespace warp::computed::serve {

std::string_view ChatPageHtml() {
  // The page reads the SSE stream itself (fetch + a reader), so that Stop can
  // abort the request: the server cancels the generation at the next token.
  static constexpr std::string_view kPage = R"html(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>WARP chat</title>
<link rel="icon" href="data:,">
<style>
  body { font: 15px/1.45 system-ui, sans-serif; margin: 0; display: flex; flex-direction: column;
         height: 100vh; background: #fafafa; color: #222; }
  header { padding: 8px 16px; background: #223; color: #eee; display: flex; gap: 12px;
           align-items: center; }
  header label { font-size: 13px; color: #bbc; }
  header input { width: 10em; margin-left: 4px; }
  header input[type=number] { width: 5em; }
  #model { color: #9ab; flex: 1; }
  #log { flex: 1; overflow-y: auto; padding: 16px; }
  .msg { width: fit-content; max-width: 52em; margin: 0 0 12px; padding: 8px 12px;
         border-radius: 8px; white-space: pre-wrap; overflow-wrap: anywhere; }
  .user { background: #dde7ff; margin-left: auto; }
  .assistant { background: #fff; border: 1px solid #ddd; }
  .reasoning { color: #777; font-style: italic; }
  .tools { font-family: monospace; color: #357; }
  .stats { font-size: 12px; color: #777; margin-top: 4px; }
  .error { background: #fee; border: 1px solid #e99; }
  form { display: flex; gap: 8px; padding: 12px 16px; border-top: 1px solid #ddd; }
  #input { flex: 1; font: inherit; padding: 8px; }
</style>
</head>
<body>
<header><strong>WARP</strong><span id="model"></span>
  <label>Temperature <input id="temperature" type="number" min="0" max="2" step="0.1"
    placeholder="1"></label>
  <label>Max tokens <input id="max-tokens" type="number" min="1" step="1"
    placeholder="all"></label>
  <label>API key <input id="key" type="password" placeholder="(none)"></label></header>
<div id="log"></div>
<form id="form">
  <textarea id="input" rows="2" placeholder="Message (Enter sends, Shift+Enter: new line)"></textarea>
  <button id="send" type="submit">Send</button>
  <button id="stop" type="button" disabled>Stop</button>
</form>
<script>
const log = document.getElementById('log');
const input = document.getElementById('input');
const key = document.getElementById('key');
const temperature = document.getElementById('temperature');
const maxTokens = document.getElementById('max-tokens');
const sendButton = document.getElementById('send');
const stopButton = document.getElementById('stop');
const messages = [];
let controller = null;
key.value = localStorage.getItem('warp-api-key') || '';
key.onchange = () => localStorage.setItem('warp-api-key', key.value);

function headers() {
  const h = { 'Content-Type': 'application/json' };
  if (key.value) h['Authorization'] = 'Bearer ' + key.value;
  return h;
}
function bubble(role, text) {
  const div = document.createElement('div');
  div.className = 'msg ' + role;
  div.textContent = text;
  log.appendChild(div);
  log.scrollTop = log.scrollHeight;
  return div;
}
fetch('/v1/models', { headers: headers() }).then(r => r.json()).then(j => {
  if (j.data) document.getElementById('model').textContent = j.data[0].id;
}).catch(() => {});

// The stats line under a reply: the final chunk's "warp" field, the usage
// chunk's token count, and why it ended if not by itself.
function describe(w, usage, finish) {
  const mib = (w.expert_bytes_read / 1048576).toFixed(1);
  const tokens = usage ? `${usage.completion_tokens} tokens, ` : '';
  const cut = finish === 'length' ? ' | cut at the length limit' : '';
  return `${tokens}${w.decode_tokens_per_second.toFixed(1)} tok/s decode, ` +
         `${w.prefill_tokens_per_second.toFixed(1)} tok/s prefill | experts ` +
         `${w.expert_hits} hit / ${w.expert_misses} miss, ${mib} MiB read${cut}`;
}

// The request: the conversation, and the settings that are filled in (blank
// ones are left to the server's defaults).
function request() {
  const body = { messages, stream: true, stream_options: { include_usage: true } };
  if (temperature.value !== '') body.temperature = Number(temperature.value);
  if (maxTokens.value !== '') body.max_tokens = Number(maxTokens.value);
  return body;
}

async function send(text) {
  messages.push({ role: 'user', content: text });
  bubble('user', text);
  const reply = bubble('assistant', '');
  const reasoning = document.createElement('div');
  reasoning.className = 'reasoning';
  const content = document.createElement('div');
  content.className = 'content';
  const tools = document.createElement('div');
  tools.className = 'tools';
  const stats = document.createElement('div');
  stats.className = 'stats';
  reply.append(reasoning, content, tools, stats);
  controller = new AbortController();
  sendButton.disabled = true;
  stopButton.disabled = false;
  let answer = '';
  let warp = null, usage = null, finish = null;
  const calls = [];  // tool calls, their streamed fragments joined by index
  try {
    const response = await fetch('/v1/chat/completions', {
      method: 'POST', headers: headers(), signal: controller.signal,
      body: JSON.stringify(request())
    });
    if (!response.ok) {
      const body = await response.json().catch(() => ({}));
      throw new Error(body.error ? body.error.message : response.statusText);
    }
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let end;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const event = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        if (!event.startsWith('data: ')) continue;  // a keep-alive comment
        const data = event.slice(6);
        if (data === '[DONE]') continue;
        const chunk = JSON.parse(data);
        if (chunk.error) throw new Error(chunk.error.message);
        if (chunk.warp) warp = chunk.warp;
        if (chunk.usage) usage = chunk.usage;
        const choice = chunk.choices.length ? chunk.choices[0] : { delta: {} };
        if (choice.finish_reason) finish = choice.finish_reason;
        if (warp) stats.textContent = describe(warp, usage, finish);
        const delta = choice.delta;
        if (delta.reasoning_content) reasoning.textContent += delta.reasoning_content;
        if (delta.content) { answer += delta.content; content.textContent = answer; }
        for (const call of delta.tool_calls || []) {
          const c = calls[call.index] ??= { name: '', arguments: '' };
          if (call.function && call.function.name) c.name += call.function.name;
          if (call.function && call.function.arguments) c.arguments += call.function.arguments;
          tools.textContent = calls.map(c => `${c.name}(${c.arguments})`).join('\n');
        }
        log.scrollTop = log.scrollHeight;
      }
    }
  } catch (e) {
    if (e.name === 'AbortError') stats.textContent = 'stopped';
    else { reply.classList.add('error'); stats.textContent = 'error: ' + e.message; }
  }
  messages.push({ role: 'assistant', content: answer });
  controller = null;
  sendButton.disabled = false;
  stopButton.disabled = true;
}

document.getElementById('form').onsubmit = (e) => {
  e.preventDefault();
  const text = input.value.trim();
  if (!text || controller) return;
  input.value = '';
  send(text);
};
input.onkeydown = (e) => {
  if (e.key === 'Enter' && !e.shiftKey) { e.preventDefault(); sendButton.click(); }
};
stopButton.onclick = () => { if (controller) controller.abort(); };
</script>
</body>
</html>
)html";
  return kPage;
}

}  // namespace warp::computed::serve
