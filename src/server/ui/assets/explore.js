// The explore page: metric names (OpenTSDB's suggest API) and the series of one metric (its
// lookup API), label names and values (Prometheus' labels API), the Graphite tree
// (/metrics/find) and OpenTSDB trees (/api/tree). Every list links to a graph on the query page.
import { el, request, qs } from './util.js';

let ui = null;
let go = null;
let state = { metric: '', label: '' };
let seq = 0;

export function mount(root, navigate) {
  go = navigate;
  ui = {
    filter: el('input#metric-filter', {
      type: 'search', placeholder: 'filter metric names (prefix)', list: 'metric-suggest', autocomplete: 'off',
    }),
    suggest: el('datalist#metric-suggest'),
    metrics: el('ul#metrics.list'),
    metricCount: el('span.muted'),
    series: el('div#series'),
    label: el('input#label-name', {
      type: 'search', placeholder: 'label name', list: 'label-suggest', autocomplete: 'off',
    }),
    labelSuggest: el('datalist#label-suggest'),
    valueFilter: el('input#label-value-filter', {
      type: 'search', placeholder: 'filter values', list: 'value-suggest', autocomplete: 'off',
    }),
    valueSuggest: el('datalist#value-suggest'),
    values: el('ul#label-values.list'),
    tree: el('ul#graphite-tree.tree'),
    tsdbTrees: el('div#tsdb-trees'),
  };
  ui.filter.addEventListener('input', () => {
    suggest('metrics', ui.filter.value, ui.suggest);
    listMetrics(ui.filter.value);
  });
  ui.filter.addEventListener('change', () => {
    // Picking an exact name from the suggestions opens it.
    if (ui.suggest.querySelector(`option[value="${CSS.escape(ui.filter.value)}"]`)) {
      openMetric(ui.filter.value);
    }
  });
  ui.label.addEventListener('change', () => {
    go(new URLSearchParams(qs([['metric', state.metric], ['label', ui.label.value.trim()]])));
  });
  ui.valueFilter.addEventListener('input', filterValues);
  root.append(el('section.explore',
    el('div.card.metrics-card',
      el('h2', 'Metrics ', ui.metricCount),
      ui.filter, ui.suggest, ui.metrics),
    el('div.card.series-card', el('h2', 'Series'), ui.series),
    el('div.card',
      el('h2', 'Labels'),
      el('div.row', ui.label, ui.labelSuggest, ui.valueFilter, ui.valueSuggest),
      ui.values),
    el('div.card',
      el('h2', 'Graphite tree'),
      el('p.muted', 'Paths as /metrics/find lists them; a leaf opens its graph.'),
      ui.tree),
    el('div.card', el('h2', 'OpenTSDB trees'), ui.tsdbTrees)));
  listMetrics('');
  loadLabelNames();
  expandTree(ui.tree, '*');
  loadTsdbTrees();
}

export function show(p) {
  state = { metric: p.get('metric') || '', label: p.get('label') || '' };
  showSeries(state.metric);
  ui.label.value = state.label;
  loadLabelValues(state.label);
}

function openMetric(name) {
  go(new URLSearchParams(qs([['metric', name], ['label', state.label]])));
}

// Fills a datalist with the suggest API's answer for a prefix.
async function suggest(type, q, datalist) {
  const r = await request('api/suggest?' + qs([['type', type], ['q', q], ['max', 25]]));
  if (Array.isArray(r.json)) datalist.replaceChildren(...r.json.map((v) => el('option', { value: v })));
}

// A link to the query page showing `q` in `lang`.
function graphLink(lang, q, text) {
  return el('a.graphlink', { href: `#/query?${qs([['lang', lang], ['q', q]])}` }, text);
}

async function listMetrics(prefix) {
  const id = ++seq;
  const r = await request('api/suggest?' + qs([['type', 'metrics'], ['q', prefix], ['max', 1000]]));
  if (id !== seq) return;
  if (!Array.isArray(r.json)) {
    ui.metrics.replaceChildren(el('li.error', errorText(r)));
    return;
  }
  ui.metricCount.textContent = `(${r.json.length}${r.json.length === 1000 ? '+' : ''})`;
  ui.metrics.replaceChildren(...r.json.map((m) =>
    el('li', el('a', { href: '#', 'data-metric': m, onclick: (e) => { e.preventDefault(); openMetric(m); } }, m))));
  if (!r.json.length) ui.metrics.append(el('li.muted', 'No metric names match.'));
}

// The series of one metric, by OpenTSDB's lookup: every tag key with its values.
async function showSeries(metric) {
  for (const a of ui.metrics.querySelectorAll('a')) a.classList.toggle('active', a.dataset.metric === metric);
  if (!metric) {
    ui.series.replaceChildren(el('p.muted', 'Pick a metric to see its series, tags and values.'));
    return;
  }
  ui.series.replaceChildren(el('p.muted', 'Loading…'));
  const r = await request('api/search/lookup?' + qs([['m', metric], ['limit', 10000]]));
  if (!r.json || !Array.isArray(r.json.results)) {
    ui.series.replaceChildren(el('p.error', errorText(r)));
    return;
  }
  const tags = new Map();
  for (const s of r.json.results) {
    for (const [k, v] of Object.entries(s.tags || {})) {
      if (!tags.has(k)) tags.set(k, new Set());
      tags.get(k).add(v);
    }
  }
  const total = r.json.totalResults ?? r.json.results.length;
  const keys = [...tags.keys()].sort();
  const sel = keys.length ? `{${keys.map((k) => `${k}=*`).join(',')}}` : '';
  const promSel = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(metric) ? metric : `{__name__="${metric}"}`;
  ui.series.replaceChildren(
    el('h3', metric),
    el('p', `${total} series`, total > r.json.results.length ? ` (the first ${r.json.results.length} below)` : ''),
    el('p.links', 'Graph: ',
      graphLink('promql', promSel, 'PromQL'), ' · ',
      graphLink('opentsdb', `sum:${metric}${sel}`, 'OpenTSDB'), ' · ',
      graphLink('graphite', metric, 'Graphite')),
    keys.length
      ? el('table.data', el('thead', el('tr', el('th', 'tag'), el('th', 'values'))),
        el('tbody', keys.map((k) => {
          const vals = [...tags.get(k)].sort();
          return el('tr', el('td.name', k), el('td',
            vals.slice(0, 200).map((v) => graphLink('opentsdb', `sum:${metric}{${k}=${v}}`, v)),
            vals.length > 200 ? el('span.muted', ` … ${vals.length - 200} more`) : null));
        })))
      : el('p.muted', 'No tags.'));
}

async function loadLabelNames() {
  const r = await request('api/v1/labels');
  if (r.json && Array.isArray(r.json.data)) {
    ui.labelSuggest.replaceChildren(...r.json.data.map((v) => el('option', { value: v })));
  }
}

let labelValues = [];

async function loadLabelValues(name) {
  labelValues = [];
  ui.valueFilter.value = '';
  if (!name) {
    ui.values.replaceChildren(el('li.muted', 'Pick a label name to list its values.'));
    return;
  }
  const r = await request(`api/v1/label/${encodeURIComponent(name)}/values`);
  if (!r.json || !Array.isArray(r.json.data)) {
    ui.values.replaceChildren(el('li.error', errorText(r)));
    return;
  }
  labelValues = r.json.data;
  ui.valueSuggest.replaceChildren(...labelValues.slice(0, 500).map((v) => el('option', { value: v })));
  filterValues();
}

function filterValues() {
  const name = state.label;
  const f = ui.valueFilter.value;
  const shown = labelValues.filter((v) => v.includes(f));
  const q = (v) => `{${name}=${JSON.stringify(v)}}`;
  ui.values.replaceChildren(...shown.slice(0, 500).map((v) => el('li', graphLink('promql', q(v), v))));
  if (shown.length > 500) ui.values.append(el('li.muted', `… ${shown.length - 500} more`));
  if (!shown.length) ui.values.append(el('li.muted', 'No values.'));
}

// One level of the Graphite tree under `ul`: branches expand on click, leaves link to a graph.
async function expandTree(ul, query) {
  ul.replaceChildren(el('li.muted', 'Loading…'));
  const r = await request('metrics/find?' + qs([['query', query]]));
  if (!Array.isArray(r.json)) {
    ul.replaceChildren(el('li.error', errorText(r)));
    return;
  }
  const nodes = [...r.json].sort((a, b) => a.text.localeCompare(b.text));
  ul.replaceChildren(...nodes.map((n) => {
    if (n.leaf) {
      return el('li.leaf', { 'data-path': n.id }, graphLink('graphite', n.id, n.text));
    }
    const children = el('ul.tree', { hidden: true });
    const toggle = el('a.branch', { href: '#', 'data-path': n.id, onclick: (e) => {
      e.preventDefault();
      children.hidden = !children.hidden;
      toggle.classList.toggle('open', !children.hidden);
      if (!children.hidden && !children.dataset.loaded) {
        children.dataset.loaded = '1';
        expandTree(children, `${n.id}.*`);
      }
    } }, n.text);
    return el('li', toggle, children);
  }));
  if (!nodes.length) ul.append(el('li.muted', 'Empty.'));
}

// OpenTSDB trees (`[tree]` in the config): each tree's root branch, then branches on click.
async function loadTsdbTrees() {
  const r = await request('api/tree');
  if (!Array.isArray(r.json)) {
    ui.tsdbTrees.replaceChildren(el('p.muted', errorText(r)));
    return;
  }
  if (!r.json.length) {
    ui.tsdbTrees.replaceChildren(el('p.muted', 'No trees defined (see the tree section of protocols/opentsdb/README.md).'));
    return;
  }
  ui.tsdbTrees.replaceChildren(el('ul.tree', r.json.map((t) => {
    const children = el('ul.tree', { hidden: true });
    const a = el('a.branch', { href: '#', onclick: (e) => {
      e.preventDefault();
      children.hidden = !children.hidden;
      if (!children.hidden && !children.dataset.loaded) {
        children.dataset.loaded = '1';
        loadBranch(children, ['treeid', t.treeId]);
      }
    } }, t.name || `tree ${t.treeId}`);
    return el('li', a, children);
  })));
}

async function loadBranch(ul, param) {
  ul.replaceChildren(el('li.muted', 'Loading…'));
  const r = await request('api/tree/branch?' + qs([param]));
  if (!r.json || r.json.error) {
    ul.replaceChildren(el('li.error', errorText(r)));
    return;
  }
  const items = [];
  for (const b of r.json.branches || []) {
    const children = el('ul.tree', { hidden: true });
    const a = el('a.branch', { href: '#', onclick: (e) => {
      e.preventDefault();
      children.hidden = !children.hidden;
      if (!children.hidden && !children.dataset.loaded) {
        children.dataset.loaded = '1';
        loadBranch(children, ['branch', b.branchId]);
      }
    } }, b.displayName);
    items.push(el('li', a, children));
  }
  for (const l of Object.values(r.json.leaves || {})) {
    const tags = Object.entries(l.tags || {}).map(([k, v]) => `${k}=${v}`).join(',');
    items.push(el('li.leaf', graphLink('opentsdb', `sum:${l.metric}${tags ? `{${tags}}` : ''}`, l.displayName)));
  }
  ul.replaceChildren(...items);
  if (!items.length) ul.append(el('li.muted', 'Empty.'));
}

function errorText(r) {
  if (r.json && r.json.error) return r.json.error.message || r.json.error;
  return `HTTP ${r.status}: ${(r.text || '').slice(0, 300)}`;
}
