// The query page: one expression in PromQL, OpenTSDB or Graphite, a time range and step, and
// its answer as a graph (uPlot), a table of last values and the raw JSON. Everything that
// shapes the view lives in the URL; running a query is writing the URL.
import {
  el, request, qs, resolveTime, parseDuration, formatTime, formatDuration, formatNumber, color,
} from './util.js';

const PRESETS = ['5m', '15m', '30m', '1h', '3h', '6h', '12h', '1d', '2d', '7d', '30d'];
const DEFAULTS = { lang: 'promql', q: '', start: 'now-1h', end: 'now', step: '', stacked: '', tab: 'graph' };
// Graphs draw at most this many series; the table and JSON still show all.
const MAX_DRAWN = 300;

// Per language: what to send for an expression, and how to read the answer into
// {series: [{name, labels, points: [[t, v]]}]} or {error}.
const LANGS = {
  promql: {
    label: 'PromQL',
    placeholder: 'rate(tsgate_points_stored_total[5m])',
    hint: 'PromQL over /api/v1/query_range. Enter runs; Shift+Enter starts a new line.',
    build(q, start, end, step) {
      const url = 'api/v1/query_range?' + qs([['query', q], ['start', start], ['end', end], ['step', step]]);
      return { url };
    },
    parse(r) {
      const j = r.json;
      if (j && j.status === 'success' && j.data && Array.isArray(j.data.result)) {
        return {
          series: j.data.result.map((s) => ({
            name: promName(s.metric || {}),
            labels: s.metric || {},
            points: (s.values || (s.value ? [s.value] : [])).map(([t, v]) => [t, promValue(v)]),
          })),
        };
      }
      if (j && j.error) return { error: `${j.errorType ? j.errorType + ': ' : ''}${j.error}` };
      return { error: httpError(r) };
    },
  },
  opentsdb: {
    label: 'OpenTSDB',
    placeholder: 'sum:1m-avg:sys.cpu.user{host=*}\n(one m= expression a line, or a JSON query body)',
    hint: 'One m= expression a line (aggregator:[downsample:][rate:]metric{tag=filter}) over /api/query, ' +
      'or a JSON query body (POSTed; start and end added when absent). The step is written in the expression.',
    build(q, start, end) {
      const text = q.trim();
      if (text.startsWith('{')) {
        let body;
        try {
          body = JSON.parse(text);
        } catch (e) {
          return { error: `The JSON query body does not parse: ${e.message}` };
        }
        if (body.start === undefined) body.start = start;
        if (body.end === undefined) body.end = end;
        return {
          url: 'api/query',
          init: { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) },
        };
      }
      const ms = lines(text).map((m) => ['m', m]);
      const url = 'api/query?' + qs([['start', start], ['end', end], ...ms]);
      const image = 'q?' + qs([['start', start], ['end', end], ...ms, ['wxh', '1000x500']]) + '&png';
      return { url, image };
    },
    parse(r) {
      const j = r.json;
      if (r.ok && Array.isArray(j)) {
        return {
          series: j.map((s) => ({
            name: tsdbName(s),
            labels: s.tags || {},
            points: Object.entries(s.dps || {}).map(([t, v]) => [Number(t) > 1e11 ? Number(t) / 1000 : Number(t), v]),
          })),
        };
      }
      if (j && j.error) {
        const d = j.error.details && j.error.details !== j.error.message ? `: ${j.error.details}` : '';
        return { error: `${j.error.message}${d}` };
      }
      return { error: httpError(r) };
    },
  },
  graphite: {
    label: 'Graphite',
    placeholder: 'servers.*.load\n(one target a line; functions too: sumSeries(servers.*.load))',
    hint: 'One graphite-web target a line over /render?format=json. The step follows the data ' +
      '(summarize() or smartSummarize() change it).',
    build(q, start, end) {
      const targets = lines(q).map((t) => ['target', t]);
      const params = [...targets, ['from', start], ['until', end]];
      return {
        url: 'render?' + qs([...params, ['format', 'json']]),
        image: 'render?' + qs([...params, ['format', 'png'], ['width', 1000], ['height', 500]]),
      };
    },
    parse(r) {
      const j = r.json;
      if (r.ok && Array.isArray(j)) {
        return {
          series: j.map((s) => ({
            name: s.target,
            labels: s.tags || {},
            points: (s.datapoints || []).map(([v, t]) => [t, v]),
          })),
        };
      }
      return { error: httpError(r) };
    },
  },
};

function lines(text) {
  return text.split('\n').map((l) => l.trim()).filter((l) => l !== '');
}

function promValue(v) {
  if (v === '+Inf') return Infinity;
  if (v === '-Inf') return -Infinity;
  return Number(v);
}

function promName(metric) {
  const name = metric.__name__ || '';
  const labels = Object.keys(metric).filter((k) => k !== '__name__').sort()
    .map((k) => `${k}="${metric[k]}"`);
  return labels.length || !name ? `${name}{${labels.join(', ')}}` : name;
}

function tsdbName(s) {
  const tags = Object.keys(s.tags || {}).sort().map((k) => `${k}=${s.tags[k]}`);
  return tags.length ? `${s.metric}{${tags.join(', ')}}` : s.metric;
}

// An error body that is not the family's JSON: graphite-web's plain text, a proxy's page.
function httpError(r) {
  if (r.status === 0) return `The request failed: ${r.text}`;
  const text = (r.text || '').replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ').trim();
  return `HTTP ${r.status}${text ? ': ' + text.slice(0, 2000) : ''}`;
}

let ui = null;
let go = null;
let state = { ...DEFAULTS };
let plot = null;
let result = null;
let seq = 0;
const hidden = new Set();
// The last expression typed in each language, so switching back and forth keeps both.
const typed = {};

export function mount(root, navigate) {
  go = navigate;
  const langButtons = Object.entries(LANGS).map(([key, l]) =>
    el('button.lang', { type: 'button', 'data-lang': key, onclick: () => switchLang(key) }, l.label));
  const expr = el('textarea#expr', { rows: 3, spellcheck: 'false', autocomplete: 'off' });
  expr.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey) {
      e.preventDefault();
      submit();
    }
  });
  const preset = el('select#preset', { title: 'Relative range ending now', onchange: () => {
    if (!preset.value) return;
    ui.start.value = `now-${preset.value}`;
    ui.end.value = 'now';
    submit();
  } },
  el('option', { value: '' }, 'custom'),
  PRESETS.map((p) => el('option', { value: p }, `last ${p}`)));
  ui = {
    langButtons,
    expr,
    preset,
    hint: el('div.hint'),
    start: el('input#start', { size: 19, title: "now-1h, epoch seconds or '2026-11-27 10:00'", onchange: submit }),
    end: el('input#end', { size: 19, title: "now, epoch seconds or '2026-11-27 11:00'", onchange: submit }),
    step: el('input#step', { size: 6, placeholder: 'auto', title: 'PromQL step: 15s, 1m, … (empty: about 250 points)', onchange: submit }),
    stacked: el('input#stacked', { type: 'checkbox', onchange: submit }),
    info: el('div#info.info'),
    error: el('div#error.error', { hidden: true, role: 'alert' }),
    tabs: ['graph', 'table', 'json'].map((t) =>
      el('button.tab', { type: 'button', 'data-tab': t, onclick: () => setTab(t, true) }, t[0].toUpperCase() + t.slice(1))),
    graph: el('div#graph.graph', { 'data-state': 'empty' }),
    table: el('div#table.tablewrap'),
    json: el('pre#json.json'),
  };
  ui.stepLabel = el('label', 'step ', ui.step);
  root.append(el('section.query',
    el('div.langs', langButtons),
    el('div.exprrow', expr, el('button#run.primary', { type: 'button', onclick: submit }, 'Run')),
    ui.hint,
    el('div.controls',
      el('label', 'range ', preset),
      el('label', 'from ', ui.start),
      el('label', 'to ', ui.end),
      ui.stepLabel,
      el('label', ui.stacked, ' stacked')),
    ui.info,
    ui.error,
    el('div.tabs', ui.tabs),
    ui.graph, ui.table, ui.json));
  window.addEventListener('resize', onResize);
}

export function unmount() {
  window.removeEventListener('resize', onResize);
  destroyPlot();
}

function onResize() {
  if (plot) plot.setSize({ width: graphWidth(), height: plot.height });
}

// The controls as URL parameters (defaults left out, so links stay short).
function params(from) {
  const p = new URLSearchParams();
  for (const k of Object.keys(DEFAULTS)) {
    // The language always: a link means the same if the default ever changes.
    if (from[k] && (from[k] !== DEFAULTS[k] || k === 'lang')) p.set(k, from[k]);
  }
  return p;
}

// An absolute time (epoch seconds in the URL) as a local date and time in the inputs.
function shownTime(t) {
  return /^\d+$/.test(t) ? formatTime(Number(t)) : t;
}

// An input's time for the URL: relative times as typed, absolute ones as epoch seconds.
function urlTime(text, fallback) {
  const t = text.trim();
  if (!t) return fallback;
  if (t.startsWith('now')) return t;
  const sec = resolveTime(t, 0);
  return sec === null ? t : String(Math.round(sec));
}

function read() {
  return {
    ...state,
    q: ui.expr.value,
    start: urlTime(ui.start.value, DEFAULTS.start),
    end: urlTime(ui.end.value, DEFAULTS.end),
    step: ui.step.value.trim(),
    stacked: ui.stacked.checked ? '1' : '',
  };
}

function submit() {
  go(params(read()));
}

function switchLang(lang) {
  const now = read();
  typed[now.lang] = now.q;
  go(params({ ...now, lang, q: typed[lang] || '' }));
}

function setTab(tab, write, redraw) {
  if (write) {
    go(params({ ...read(), tab }), true);
    return;
  }
  state.tab = tab;
  for (const b of ui.tabs) b.classList.toggle('active', b.dataset.tab === tab);
  ui.graph.hidden = tab !== 'graph';
  ui.table.hidden = tab !== 'table';
  ui.json.hidden = tab !== 'json';
  if (redraw && tab === 'graph' && result) draw();
}

export function show(p) {
  const next = { ...DEFAULTS };
  for (const k of Object.keys(DEFAULTS)) if (p.get(k) !== null) next[k] = p.get(k);
  if (!LANGS[next.lang]) next.lang = DEFAULTS.lang;
  const tabOnly = result && ['lang', 'q', 'start', 'end', 'step', 'stacked']
    .every((k) => next[k] === state[k]) && next.tab !== state.tab;
  state = next;
  const lang = LANGS[state.lang];
  for (const b of ui.langButtons) b.classList.toggle('active', b.dataset.lang === state.lang);
  ui.expr.value = state.q;
  ui.expr.placeholder = lang.placeholder;
  ui.hint.textContent = lang.hint;
  ui.start.value = shownTime(state.start);
  ui.end.value = shownTime(state.end);
  ui.step.value = state.step;
  ui.stepLabel.hidden = state.lang !== 'promql';
  ui.stacked.checked = state.stacked === '1';
  const rel = state.start.match(/^now-(.+)$/);
  ui.preset.value = rel && state.end === 'now' && PRESETS.includes(rel[1]) ? rel[1] : '';
  setTab(state.tab, false, tabOnly);
  if (tabOnly) return;
  if (state.q.trim()) {
    run();
  } else {
    clear('empty');
    ui.info.textContent = 'Type an expression and press Enter.';
  }
}

function clear(kind) {
  destroyPlot();
  result = null;
  ui.graph.replaceChildren();
  ui.graph.dataset.state = kind;
  ui.graph.dataset.series = '0';
  ui.graph.dataset.points = '0';
  ui.table.replaceChildren();
  ui.json.textContent = '';
  ui.error.hidden = true;
  ui.error.textContent = '';
  publish({ state: kind });
}

// What a test or a curious user can read from the page: window.tsgateUI.
function publish(extra) {
  window.tsgateUI = { lang: state.lang, q: state.q, series: [], error: null, ...extra };
}

function fail(message, r) {
  clear('error');
  ui.graph.append(el('p.muted.nodata', 'No graph: the query failed (above).'));
  ui.error.hidden = false;
  ui.error.textContent = message;
  if (r) {
    ui.info.replaceChildren(`HTTP ${r.status} · ${Math.round(r.ms)} ms`);
    ui.json.textContent = r.json ? JSON.stringify(r.json, null, 2) : r.text;
  } else {
    ui.info.replaceChildren();
  }
  publish({ state: 'error', error: message });
}

async function run() {
  const id = ++seq;
  const lang = LANGS[state.lang];
  const now = Math.floor(Date.now() / 1000);
  const start = resolveTime(state.start, now);
  const end = resolveTime(state.end, now);
  if (start === null) return fail(`Cannot read the start time "${state.start}"`);
  if (end === null) return fail(`Cannot read the end time "${state.end}"`);
  if (end <= start) return fail('The end time must be after the start time');
  let step = Math.max(1, Math.round((end - start) / 250));
  if (state.step) {
    step = parseDuration(state.step);
    if (step === null || step <= 0) return fail(`Cannot read the step "${state.step}" (write 15s, 1m, 1h, …)`);
  }
  const req = lang.build(state.q, Math.floor(start), Math.ceil(end), step);
  if (req.error) return fail(req.error);
  ui.graph.dataset.state = 'loading';
  publish({ state: 'loading' });
  ui.info.textContent = 'Running…';
  const r = await request(req.url, req.init);
  if (id !== seq) return; // a newer query was started meanwhile
  const parsed = lang.parse(r);
  if (parsed.error) return fail(parsed.error, r);
  const series = parsed.series.map((s) => ({
    ...s,
    points: s.points.filter(([t]) => Number.isFinite(t)).sort((a, b) => a[0] - b[0]),
  }));
  dedupeNames(series);
  result = { series, start, end, raw: r };
  ui.error.hidden = true;
  const points = series.reduce((n, s) => n + s.points.filter(([, v]) => v !== null).length, 0);
  const info = [
    `${series.length} series, ${points} points`,
    `${Math.round(r.ms)} ms`,
    `HTTP ${r.status}`,
    `${formatTime(start)} → ${formatTime(end)} (${formatDuration(end - start)}${state.lang === 'promql' ? `, step ${formatDuration(step)}` : ''})`,
  ].join(' · ');
  ui.info.replaceChildren(el('span', info, ' · ',
    req.init ? 'POST api/query' : el('a', { href: req.url, target: '_blank' }, 'request'),
    req.image ? [' · ', el('a', { href: req.image, target: '_blank' }, 'image')] : null));
  ui.json.textContent = r.json ? truncate(JSON.stringify(r.json, null, 2)) : truncate(r.text);
  ui.graph.dataset.series = String(series.length);
  ui.graph.dataset.points = String(points);
  drawTable(series);
  publish({
    state: 'ok',
    series: series.map((s) => ({ name: s.name, points: s.points.filter(([, v]) => v !== null).length })),
    ms: r.ms,
  });
  if (state.tab === 'graph') draw();
  ui.graph.dataset.state = series.length ? 'ok' : 'nodata';
}

function truncate(text) {
  const max = 2 << 20;
  return text.length > max ? text.slice(0, max) + `\n… (${text.length - max} more characters)` : text;
}

// Two series of the same name (two OpenTSDB sub-queries of one metric) get a '#2' suffix.
function dedupeNames(series) {
  const seen = new Map();
  for (const s of series) {
    const n = (seen.get(s.name) || 0) + 1;
    seen.set(s.name, n);
    if (n > 1) s.name = `${s.name} #${n}`;
  }
}

function drawTable(series) {
  const rows = series.map((s) => {
    const lastPoint = [...s.points].reverse().find(([, v]) => v !== null);
    return el('tr',
      el('td.name', s.name),
      el('td.num', lastPoint ? String(lastPoint[1]) : '–'),
      el('td.time', lastPoint ? formatTime(lastPoint[0]) : '–'));
  });
  ui.table.replaceChildren(series.length
    ? el('table.data', el('thead', el('tr', el('th', 'series'), el('th', 'last value'), el('th', 'at'))), el('tbody', rows))
    : el('p.muted', 'No series.'));
}

function graphWidth() {
  return Math.max(300, ui.graph.clientWidth || ui.graph.parentElement.clientWidth || 800);
}

function destroyPlot() {
  if (plot) {
    plot.destroy();
    plot = null;
  }
}

// Tick labels of the time axis: hours and minutes (seconds when a tick needs them), with the
// date when the range spans days.
function timeTicks(u, splits) {
  const span = u.scales.x.max - u.scales.x.min;
  return splits.map((t) => {
    const full = formatTime(t);
    const hm = t % 60 ? full.slice(11) : full.slice(11, 16);
    return span > 86400 ? `${full.slice(5, 10)} ${hm}` : hm;
  });
}

// Aligns every series on the union of their timestamps (uPlot's data layout).
function align(series) {
  const ts = new Set();
  for (const s of series) for (const [t] of s.points) ts.add(t);
  const xs = [...ts].sort((a, b) => a - b);
  const at = new Map(xs.map((t, i) => [t, i]));
  const ys = series.map((s) => {
    const y = new Array(xs.length).fill(null);
    for (const [t, v] of s.points) y[at.get(t)] = typeof v === 'number' && Number.isFinite(v) ? v : null;
    return y;
  });
  return [xs, ys];
}

// Stacked: each visible series drawn on top of the visible ones before it.
function stack(ys, shown) {
  const acc = new Array(ys.length ? ys[0].length : 0).fill(0);
  return ys.map((y, i) => {
    if (!shown[i]) return y;
    return y.map((v, j) => {
      if (v === null) return null;
      acc[j] += v;
      return acc[j];
    });
  });
}

function draw() {
  destroyPlot();
  ui.graph.replaceChildren();
  if (!result || !result.series.length) {
    ui.graph.append(el('p.muted.nodata', result ? 'No data in this range.' : ''));
    return;
  }
  const drawn = result.series.slice(0, MAX_DRAWN);
  const [xs, raw] = align(drawn);
  const stacked = state.stacked === '1';
  const shown = drawn.map((s) => !hidden.has(s.name));
  const data = () => [xs, ...(stacked ? stack(raw, shown) : raw)];
  const opts = {
    width: graphWidth(),
    height: 380,
    cursor: { drag: { x: true, y: false, setScale: false } },
    select: { show: true },
    scales: { x: { time: true, range: [result.start, result.end] } },
    legend: { live: true },
    axes: [
      { stroke: '#555', grid: { stroke: '#eee' }, space: 80, values: (u, splits) => timeTicks(u, splits) },
      { stroke: '#555', grid: { stroke: '#eee' }, size: 64, values: (u, vals) => vals.map(formatNumber) },
    ],
    series: [
      { label: 'time', value: (u, v) => (v === null || v === undefined ? '' : formatTime(v)) },
      ...drawn.map((s, i) => ({
        label: s.name,
        stroke: color(i),
        width: 1.5,
        show: shown[i],
        fill: stacked ? color(i) + '55' : undefined,
        spanGaps: false,
        // The series' own value on hover, not its stacked height.
        value: (u, v, si, idx) => (idx === null || idx === undefined ? '' : formatNumber(raw[si - 1][idx])),
      })),
    ],
    hooks: {
      // A drag selects a time range: it becomes the view's absolute range (Back undoes it).
      setSelect: [(u) => {
        if (u.select.width < 3) return;
        const from = Math.floor(u.posToVal(u.select.left, 'x'));
        const to = Math.ceil(u.posToVal(u.select.left + u.select.width, 'x'));
        u.setSelect({ left: 0, width: 0, top: 0, height: 0 }, false);
        if (to > from) go(params({ ...read(), start: String(from), end: String(to) }));
      }],
      // A click on a legend entry hides or shows its series; stacks are summed again.
      setSeries: [(u, si) => {
        if (si === null || si === undefined || si === 0) return;
        const s = drawn[si - 1];
        shown[si - 1] = u.series[si].show;
        if (u.series[si].show) hidden.delete(s.name);
        else hidden.add(s.name);
        if (stacked) u.setData(data());
      }],
    },
  };
  plot = new window.uPlot(opts, data(), ui.graph);
  if (result.series.length > MAX_DRAWN) {
    ui.graph.append(el('p.muted', `Drawing the first ${MAX_DRAWN} of ${result.series.length} series; the table lists all.`));
  }
}
