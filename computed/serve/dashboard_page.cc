#include "computed/serve/dashboard_page.h"

namespace warp::computed::serve {

std::string_view DashboardHtml() {
  // Polls /metrics (Prometheus text) and plots what changed between polls:
  // counters become rates, gauges are drawn as they are. Plain canvas, no
  // outside fetches.
  static constexpr std::string_view kPage = R"html(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>WARP engine</title>
<link rel="icon" href="data:,">
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 0; background: #fafafa; color: #222; }
  header { padding: 8px 16px; background: #223; color: #eee; display: flex; gap: 14px;
           align-items: center; }
  header a { color: #9ab; }
  header label { font-size: 13px; color: #bbc; }
  #updated { color: #9ab; flex: 1; }
  main { display: grid; grid-template-columns: repeat(auto-fill, minmax(420px, 1fr)); gap: 12px;
         padding: 12px; }
  section { background: #fff; border: 1px solid #ddd; border-radius: 6px; padding: 8px 10px; }
  h2 { font-size: 14px; margin: 0 0 4px; }
  canvas { width: 100%; height: 140px; }
  .legend span { margin-right: 12px; font-size: 12px; }
  table { border-collapse: collapse; font-size: 13px; }
  td { padding: 1px 10px 1px 0; }
  td.v { text-align: right; font-variant-numeric: tabular-nums; }
</style>
</head>
<body>
<header><b>WARP engine</b><a href="/">chat</a><span id="updated"></span>
  <label>every <input id="every" type="number" value="2" min="0.5" step="0.5" style="width:4em"> s</label>
  <label>API key <input id="key" type="password" placeholder="(none)"></label></header>
<main>
  <section><h2>Tokens per second</h2><canvas id="tps"></canvas><div class="legend" id="tps-legend"></div></section>
  <section><h2>Experts: hits and misses per second</h2><canvas id="hits"></canvas><div class="legend" id="hits-legend"></div></section>
  <section><h2>Bytes read per token, by class</h2><canvas id="bytes"></canvas><div class="legend" id="bytes-legend"></div></section>
  <section><h2>Disk reads (MB/s)</h2><canvas id="disk"></canvas><div class="legend" id="disk-legend"></div></section>
  <section><h2>Expert cache fill against its budget (MiB)</h2><canvas id="cache"></canvas><div class="legend" id="cache-legend"></div></section>
  <section><h2>Figures now</h2><table id="figures"></table></section>
  <section style="grid-column: 1 / -1"><h2>Experts' heat: routes by layer (rows) and expert (columns)</h2>
    <canvas id="heat" style="height:auto"></canvas><div class="legend" id="heat-note"></div></section>
</main>
<script>
'use strict';
const key = document.getElementById('key');
key.value = localStorage.getItem('warp-api-key') || '';
key.onchange = () => localStorage.setItem('warp-api-key', key.value);
const every = document.getElementById('every');
const colors = ['#2a6', '#c43', '#36c', '#b80', '#839', '#777'];
const kWindow = 300;  // seconds of history drawn

// Prometheus text into {name: {labels: value}} (labels as written, "" for none).
function parseMetrics(text) {
  const out = {};
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$/);
    if (!m) continue;
    (out[m[1]] ??= {})[m[2] ? m[2].slice(1, -1) : ''] = Number(m[3]);
  }
  return out;
}
const value = (metrics, name, labels = '') => metrics[name]?.[labels] ?? 0;
const sum = (metrics, name) => Object.values(metrics[name] ?? {}).reduce((a, b) => a + b, 0);

const history = [];  // {t, series: {chart: {label: value}}}
let previous = null;

// What each chart shows between two polls `a` and `b` (dt seconds apart).
function sample(a, b, dt) {
  const d = (name, labels = '') => value(b, name, labels) - value(a, name, labels);
  const tokens = d('warp_tokens_total', 'kind="completion"') + d('warp_tokens_total', 'kind="prompt"') -
                 d('warp_tokens_total', 'kind="prompt_reused"');
  const perToken = (x) => (tokens > 0 ? x / tokens : 0);
  const hits = ['cache', 'lookahead', 'certain'].reduce((s, k) => s + d('warp_expert_records_total', `served="${k}"`), 0);
  const readBytes = {};
  for (const labels of Object.keys(b.warp_store_read_bytes_total ?? {})) {
    readBytes[labels.replace(/^priority="|"$/g, '')] = perToken(d('warp_store_read_bytes_total', labels));
  }
  readBytes.unused = perToken(d('warp_lookahead_wasted_bytes_total'));
  return {
    tps: {decode: d('warp_tokens_total', 'kind="completion"') / dt,
          prefill: (d('warp_tokens_total', 'kind="prompt"') - d('warp_tokens_total', 'kind="prompt_reused"')) / dt},
    hits: {hits: hits / dt, misses: d('warp_expert_records_total', 'served="disk"') / dt},
    bytes: readBytes,
    disk: {read: (sum(b, 'warp_store_read_bytes_total') - sum(a, 'warp_store_read_bytes_total')) / dt / 1e6},
    cache: {used: value(b, 'warp_store_cache_used_bytes') / 1048576,
            budget: value(b, 'warp_store_cache_capacity_bytes') / 1048576},
  };
}

function draw(chart) {
  const canvas = document.getElementById(chart);
  const width = canvas.width = canvas.clientWidth * devicePixelRatio;
  const height = canvas.height = canvas.clientHeight * devicePixelRatio;
  const g = canvas.getContext('2d');
  g.clearRect(0, 0, width, height);
  const now = history.length ? history[history.length - 1].t : 0;
  // The window, or all there is of it so far (at least 10 s).
  const span = Math.max(10, Math.min(kWindow, history.length ? now - history[0].t : 0));
  const labels = [...new Set(history.flatMap((h) => Object.keys(h.series[chart] ?? {})))];
  let top = 0;
  for (const h of history) for (const l of labels) top = Math.max(top, h.series[chart]?.[l] ?? 0);
  top = top > 0 ? top * 1.1 : 1;
  g.fillStyle = '#999';
  g.font = `${11 * devicePixelRatio}px system-ui`;
  g.fillText(top.toPrecision(3), 2, 12 * devicePixelRatio);
  labels.forEach((l, i) => {
    g.strokeStyle = colors[i % colors.length];
    g.lineWidth = 1.5 * devicePixelRatio;
    g.beginPath();
    history.forEach((h, j) => {
      const x = width * (1 - (now - h.t) / span);
      const y = height * (1 - (h.series[chart]?.[l] ?? 0) / top);
      j ? g.lineTo(x, y) : g.moveTo(x, y);
    });
    g.stroke();
  });
  const last = history.length ? history[history.length - 1].series[chart] ?? {} : {};
  document.getElementById(chart + '-legend').innerHTML = labels.map((l, i) =>
    `<span style="color:${colors[i % colors.length]}">${l} ${(last[l] ?? 0).toPrecision(3)}</span>`).join('');
}

// The table's rows: id, label, the metric's value.
const kFigures = [
  ['requests', 'requests served', (m) => value(m, 'warp_requests_total', 'outcome="ok"')],
  ['completion-tokens', 'tokens generated', (m) => value(m, 'warp_tokens_total', 'kind="completion"')],
  ['prompt-tokens', 'prompt tokens', (m) => value(m, 'warp_tokens_total', 'kind="prompt"')],
  ['cache-hits', 'expert records from cache', (m) => value(m, 'warp_expert_records_total', 'served="cache"')],
  ['disk-records', 'expert records from disk', (m) => value(m, 'warp_expert_records_total', 'served="disk"')],
  ['read-bytes', 'bytes read', (m) => sum(m, 'warp_store_read_bytes_total')],
  ['cache-used', 'cache used (bytes)', (m) => value(m, 'warp_store_cache_used_bytes')],
  ['cache-capacity', 'cache budget (bytes)', (m) => value(m, 'warp_store_cache_capacity_bytes')],
  ['governor-shrinks', 'governor: cache shrunk', (m) => value(m, 'warp_governor_actions_total', 'action="shrink"')],
  ['governor-grows', 'governor: cache grown', (m) => value(m, 'warp_governor_actions_total', 'action="grow"')],
  ['decode-tps', 'last reply decode tok/s', (m) => value(m, 'warp_decode_tokens_per_second')],
  ['ttft-count', 'first tokens timed', (m) => value(m, 'warp_time_to_first_token_seconds_count')],
];

// The routes counted by layer (serve --learn): each row shaded against its hottest expert.
function drawHeat(heat) {
  const canvas = document.getElementById('heat');
  const layers = heat.layers;
  const note = document.getElementById('heat-note');
  if (!layers.length) {
    canvas.height = 0;
    note.textContent = 'no routes counted: start computed serve with --learn';
    return 0;
  }
  const experts = Math.max(...layers.map((l) => l.experts.length));
  const row = Math.max(2, Math.min(12, Math.floor(400 / layers.length)));
  const width = canvas.width = canvas.clientWidth * devicePixelRatio;
  const height = canvas.height = layers.length * row * devicePixelRatio;
  canvas.style.height = layers.length * row + 'px';
  const g = canvas.getContext('2d');
  const cell = width / experts;
  let total = 0;
  layers.forEach((layer, i) => {
    const hottest = Math.max(1, ...layer.experts);
    layer.experts.forEach((count, e) => {
      total += count;
      g.fillStyle = `rgba(200, 60, 30, ${count / hottest})`;
      g.fillRect(e * cell, i * row * devicePixelRatio, Math.ceil(cell), row * devicePixelRatio);
    });
  });
  note.textContent = `${layers.length} layers (${layers[0].layer}..${layers[layers.length - 1].layer}), ` +
                     `${experts} experts, ${total} routes`;
  return total;
}

async function poll() {
  try {
    const headers = key.value ? {Authorization: 'Bearer ' + key.value} : {};
    const response = await fetch('/metrics', {headers});
    if (!response.ok) throw new Error('/metrics: ' + response.status);
    const metrics = parseMetrics(await response.text());
    const t = performance.now() / 1000;
    if (previous) {
      history.push({t, series: sample(previous.metrics, metrics, Math.max(1e-3, t - previous.t))});
      while (history.length && t - history[0].t > kWindow) history.shift();
    }
    previous = {t, metrics};
    for (const chart of ['tps', 'hits', 'bytes', 'disk', 'cache']) draw(chart);
    const heat = await fetch('/metrics/heat', {headers});
    if (!heat.ok) throw new Error('/metrics/heat: ' + heat.status);
    const routes = drawHeat(await heat.json());
    document.getElementById('figures').innerHTML = kFigures.map(([id, label, get]) =>
      `<tr><td>${label}</td><td class="v" id="${id}">${get(metrics)}</td></tr>`).join('') +
      `<tr><td>expert routes counted</td><td class="v" id="routes">${routes}</td></tr>`;
    document.getElementById('updated').textContent = 'updated ' + new Date().toLocaleTimeString();
  } catch (e) {
    document.getElementById('updated').textContent = String(e.message || e);
  }
  setTimeout(poll, Math.max(0.5, Number(every.value) || 2) * 1000);
}
poll();
</script>
</body>
</html>
)html";
  return kPage;
}

}  // namespace warp::computed::serve
