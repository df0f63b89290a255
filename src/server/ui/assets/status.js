// The status page: ingest rates and rejects, the write path and store, query latencies and the
// process, read from /metrics every few seconds; series counts (/api/v1/status/tsdb), the build
// and the (redacted) configuration (/api/config).
import { el, request, formatNumber, formatBytes, formatDuration } from './util.js';

const EVERY_MS = 5000;
let ui = null;
let timer = null;
let previous = null;

export function mount(root) {
  ui = {
    updated: el('span#status-updated.muted'),
    ingest: el('div#ingest'),
    rejects: el('div#rejects'),
    store: el('div#store'),
    queries: el('div#queries'),
    series: el('div#series-counts'),
    process: el('div#process'),
    build: el('div#build'),
    config: el('div#config'),
  };
  root.append(el('section.status',
    el('p', 'Refreshed every 5 s from ', el('a', { href: 'metrics', target: '_blank' }, '/metrics'), ' ', ui.updated),
    el('div.grid',
      el('div.card', el('h2', 'Ingest'), ui.ingest),
      el('div.card', el('h2', 'Rejected points'), ui.rejects),
      el('div.card', el('h2', 'Write path and store'), ui.store),
      el('div.card', el('h2', 'Queries'), ui.queries),
      el('div.card', el('h2', 'Series'), ui.series),
      el('div.card', el('h2', 'Process'), ui.process),
      el('div.card', el('h2', 'Build'), ui.build),
      el('div.card.wide', el('h2', 'Configuration'), ui.config))));
  previous = null;
  // A second reading a second after the first, so rates show at once; then every 5 s.
  refresh().then(() => setTimeout(refresh, 1000));
  timer = setInterval(refresh, EVERY_MS);
  loadStatic();
}

export function unmount() {
  clearInterval(timer);
  timer = null;
}

export function show() {}

// The Prometheus text format into [{name, labels, value}].
export function parseExposition(text) {
  const out = [];
  for (const line of text.split('\n')) {
    if (!line || line[0] === '#') continue;
    const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)/);
    if (!m) continue;
    const labels = {};
    for (const l of (m[3] || '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[l[1]] = l[2].replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
    }
    out.push({ name: m[1], labels, value: Number(m[4]) });
  }
  return out;
}

function pick(samples, name, filter) {
  return samples.filter((s) => s.name === name && (!filter || filter(s.labels)));
}

function sum(samples, name, filter) {
  return pick(samples, name, filter).reduce((a, s) => a + s.value, 0);
}

function one(samples, name) {
  const s = samples.find((x) => x.name === name);
  return s ? s.value : null;
}

// Sums of `name` grouped by one label.
function by(samples, name, label) {
  const m = new Map();
  for (const s of pick(samples, name)) m.set(s.labels[label], (m.get(s.labels[label]) || 0) + s.value);
  return m;
}

// The latency below which a fraction q of a histogram's observations fall (linear within the
// bucket, as Prometheus' histogram_quantile).
function quantile(samples, name, filter, q) {
  const buckets = pick(samples, `${name}_bucket`, filter)
    .map((s) => [s.labels.le === '+Inf' ? Infinity : Number(s.labels.le), s.value])
    .sort((a, b) => a[0] - b[0]);
  if (!buckets.length) return null;
  const total = buckets[buckets.length - 1][1];
  if (!total) return null;
  const rank = q * total;
  let [prevLe, prevCount] = [0, 0];
  for (const [le, count] of buckets) {
    if (count >= rank) {
      if (le === Infinity) return prevLe;
      return prevLe + ((le - prevLe) * (rank - prevCount)) / Math.max(1, count - prevCount);
    }
    [prevLe, prevCount] = [le, count];
  }
  return prevLe;
}

function table(head, rows, id) {
  if (!rows.length) return el('p.muted', 'Nothing yet.');
  return el('table.data', { id },
    el('thead', el('tr', head.map((h) => el('th', h)))),
    el('tbody', rows));
}

function kv(pairs) {
  return el('table.data.kv', el('tbody', pairs.map(([k, v]) => el('tr', el('th', k), el('td.num', v)))));
}

function seconds(v) {
  if (v === null || v === undefined || Number.isNaN(v)) return '–';
  if (v < 1) return `${+(v * 1000).toPrecision(3)} ms`;
  return `${+v.toPrecision(3)} s`;
}

async function refresh() {
  const r = await request('metrics');
  if (!ui) return;
  if (!r.ok) {
    ui.updated.textContent = `(/metrics: HTTP ${r.status})`;
    return;
  }
  const now = performance.now();
  const samples = parseExposition(r.text);
  ui.updated.textContent = `· last ${new Date().toLocaleTimeString()}`;
  const stored = by(samples, 'tsgate_points_stored_total', 'protocol');
  const rejected = by(samples, 'tsgate_points_rejected_total', 'protocol');
  const dt = previous ? (now - previous.at) / 1000 : 0;
  const protocols = [...new Set([...stored.keys(), ...rejected.keys()])].sort();
  ui.ingest.replaceChildren(table(['protocol', 'points/s', 'stored', 'rejected'],
    protocols.map((p) => {
      const rate = previous && dt > 0 ? Math.max(0, (stored.get(p) || 0) - (previous.stored.get(p) || 0)) / dt : null;
      return el('tr', { 'data-protocol': p },
        el('td', p),
        el('td.num', rate === null ? '…' : formatNumber(rate)),
        el('td.num.stored', String(stored.get(p) || 0)),
        el('td.num', String(rejected.get(p) || 0)));
    }), 'ingest-table'));
  previous = { at: now, stored };

  const rejects = pick(samples, 'tsgate_points_rejected_total').filter((s) => s.value > 0)
    .sort((a, b) => b.value - a.value);
  const batches = pick(samples, 'tsgate_ingest_batches_rejected_total').filter((s) => s.value > 0);
  ui.rejects.replaceChildren(...[
    rejects.length
      ? table(['protocol', 'reason', 'points'], rejects.map((s) => el('tr',
        el('td', s.labels.protocol), el('td', s.labels.reason), el('td.num', String(s.value)))), 'rejects-table')
      : el('p.muted', 'No point has been rejected.'),
    batches.length
      ? el('p', 'Whole bodies refused: ', batches.map((s) => `${s.labels.protocol} ${s.value}`).join(', '))
      : null].filter(Boolean));

  const ops = [...new Set(pick(samples, 'tsgate_store_operation_duration_seconds_count').map((s) => s.labels.op))].sort();
  ui.store.replaceChildren(
    kv([
      ['WAL written', formatBytes(one(samples, 'tsgate_wal_bytes_written_total'))],
      ['WAL group commits', formatNumber(one(samples, 'tsgate_wal_commits_total'))],
      ['WAL fsync p99', seconds(quantile(samples, 'tsgate_wal_fsync_duration_seconds', null, 0.99))],
      ['points buffered', formatNumber(one(samples, 'tsgate_write_buffered_points'))],
      ['points being flushed', formatNumber(one(samples, 'tsgate_write_flushing_points'))],
      ['rows awaiting compaction', formatNumber(one(samples, 'tsgate_compaction_queue_rows'))],
      ['UID cache entries', formatNumber(one(samples, 'tsgate_uid_cache_size'))],
      ['series cache entries', formatNumber(one(samples, 'tsgate_series_cache_size'))],
    ]),
    table(['store op', 'count', 'mean', 'p99', 'errors'], ops.map((op) => {
      const f = (l) => l.op === op;
      const n = sum(samples, 'tsgate_store_operation_duration_seconds_count', f);
      const total = sum(samples, 'tsgate_store_operation_duration_seconds_sum', f);
      return el('tr', el('td', op), el('td.num', formatNumber(n)), el('td.num', seconds(n ? total / n : null)),
        el('td.num', seconds(quantile(samples, 'tsgate_store_operation_duration_seconds', f, 0.99))),
        el('td.num', String(sum(samples, 'tsgate_store_errors_total', f))));
    })));

  const apis = [...new Set(pick(samples, 'tsgate_query_duration_seconds_count').map((s) => s.labels.api))].sort();
  ui.queries.replaceChildren(table(['API', 'queries', 'mean', 'p50', 'p99'], apis.map((api) => {
    const f = (l) => l.api === api;
    const n = sum(samples, 'tsgate_query_duration_seconds_count', f);
    const total = sum(samples, 'tsgate_query_duration_seconds_sum', f);
    return el('tr', el('td', api), el('td.num', formatNumber(n)), el('td.num', seconds(n ? total / n : null)),
      el('td.num', seconds(quantile(samples, 'tsgate_query_duration_seconds', f, 0.5))),
      el('td.num', seconds(quantile(samples, 'tsgate_query_duration_seconds', f, 0.99))));
  }), 'queries-table'));

  const start = one(samples, 'process_start_time_seconds');
  ui.process.replaceChildren(kv([
    ['uptime', start ? formatDuration(Date.now() / 1000 - start) : '–'],
    ['resident memory', formatBytes(one(samples, 'process_resident_memory_bytes'))],
    ['CPU time', seconds(one(samples, 'process_cpu_seconds_total'))],
    ['threads', formatNumber(one(samples, 'process_threads'))],
    ['open files', `${formatNumber(one(samples, 'process_open_fds'))} of ${formatNumber(one(samples, 'process_max_fds'))}`],
    ['connections open', [...by(samples, 'tsgate_connections_open', 'listener')].map(([l, v]) => `${l} ${v}`).join(', ') || '–'],
  ]));
  const info = pick(samples, 'tsgate_build_info')[0];
  if (info) buildLabels = info.labels;
  renderBuild();
  loadSeries();
}

let build = null;
let buildLabels = {};

async function loadStatic() {
  const [b, c] = await Promise.all([request('api/v1/status/buildinfo'), request('api/config')]);
  if (!ui) return;
  build = b.json && b.json.data ? b.json.data : null;
  renderBuild();
  if (c.json && typeof c.json === 'object' && !c.json.error) {
    ui.config.replaceChildren(el('details',
      el('summary', `${Object.keys(c.json).length} settings (secrets are never shown)`),
      kv(Object.entries(c.json).sort(([a], [b2]) => a.localeCompare(b2)).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]))));
  } else {
    ui.config.replaceChildren(el('p.error', `HTTP ${c.status}: ${c.text.slice(0, 300)}`));
  }
}

function renderBuild() {
  const labels = buildLabels;
  ui.build.replaceChildren(kv([
    ['tsgate', labels.version || '–'],
    ['storage backend', labels.backend || '–'],
    ['Prometheus API', build ? `${build.version} (${build.revision})` : '–'],
    ['OpenTSDB API', '2.4'],
  ]));
}

async function loadSeries() {
  const r = await request('api/v1/status/tsdb?limit=10&names=stored');
  if (!ui) return;
  const d = r.json && r.json.data;
  if (!d) {
    ui.series.replaceChildren(el('p.error', `HTTP ${r.status}: ${(r.text || '').slice(0, 300)}`));
    return;
  }
  ui.series.replaceChildren(
    kv([['series', formatNumber(d.headStats.numSeries)], ['tag pairs', formatNumber(d.headStats.numLabelPairs)]]),
    el('h3', 'Most series by metric'),
    table(['metric', 'series'], (d.seriesCountByMetricName || []).map((x) =>
      el('tr', el('td', el('a', { href: `#/explore?metric=${encodeURIComponent(x.name)}` }, x.name)), el('td.num', String(x.value)))), 'series-table'));
  ui.series.dataset.series = String(d.headStats.numSeries);
}
