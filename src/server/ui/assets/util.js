// Small helpers shared by the pages: DOM building, time parsing and formatting, fetching.

// el('div.cls#id', {attr: v, onclick: f}, child, 'text', …)
export function el(spec, attrs, ...children) {
  const m = spec.match(/^([a-z0-9]+)?((?:[.#][\w-]+)*)$/i);
  const node = document.createElement(m[1] || 'div');
  for (const part of (m[2] || '').match(/[.#][\w-]+/g) || []) {
    if (part[0] === '.') node.classList.add(part.slice(1));
    else node.id = part.slice(1);
  }
  if (attrs && (typeof attrs !== 'object' || attrs instanceof Node || Array.isArray(attrs))) {
    children.unshift(attrs);
    attrs = null;
  }
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else if (k === 'value') node.value = v;
    else node.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

const UNITS = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400, w: 604800, y: 31536000 };

// '90s', '5m', '1h30m', '2d' -> seconds; a bare number is seconds; null if unreadable.
export function parseDuration(text) {
  const s = String(text).trim();
  if (s === '') return null;
  if (/^\d+(\.\d+)?$/.test(s)) return Number(s);
  let total = 0;
  let rest = s;
  while (rest.length) {
    const m = rest.match(/^(\d+(?:\.\d+)?)(ms|s|m|h|d|w|y)/);
    if (!m) return null;
    total += Number(m[1]) * UNITS[m[2]];
    rest = rest.slice(m[0].length);
  }
  return total;
}

// A time as the pages hold it: 'now', 'now-1h', epoch seconds, or a local date and time
// ('2026-11-27 10:00[:00]' or ISO 8601). Returns epoch seconds, or null if unreadable.
export function resolveTime(text, nowSec) {
  const s = String(text || '').trim();
  if (s === '' || s === 'now') return nowSec;
  const rel = s.match(/^now-(.+)$/);
  if (rel) {
    const d = parseDuration(rel[1]);
    return d === null ? null : nowSec - d;
  }
  if (/^\d{9,11}(\.\d+)?$/.test(s)) return Number(s);
  if (/^\d{12,14}$/.test(s)) return Number(s) / 1000;
  const local = s.match(/^(\d{4})-(\d\d)-(\d\d)(?:[ T](\d\d):(\d\d)(?::(\d\d))?)?$/);
  if (local) {
    const [, y, mo, d, h = 0, mi = 0, sec = 0] = local;
    return new Date(+y, mo - 1, +d, +h, +mi, +sec).getTime() / 1000;
  }
  const t = Date.parse(s);
  return Number.isNaN(t) ? null : t / 1000;
}

const pad = (n) => String(n).padStart(2, '0');

// Epoch seconds -> '2026-11-27 10:00:00' in the browser's time zone.
export function formatTime(sec) {
  const d = new Date(sec * 1000);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

// Seconds -> the shortest '1h30m' spelling.
export function formatDuration(sec) {
  if (sec <= 0) return '0s';
  let out = '';
  let rest = Math.round(sec);
  for (const [u, n] of [['d', 86400], ['h', 3600], ['m', 60], ['s', 1]]) {
    if (rest >= n) {
      out += Math.floor(rest / n) + u;
      rest %= n;
    }
  }
  return out || `${sec}s`;
}

// A number for people: 1234567 -> '1.23M', 0.000123 -> '0.000123'.
export function formatNumber(v) {
  if (v === null || v === undefined || Number.isNaN(v)) return '–';
  if (!Number.isFinite(v)) return String(v);
  const a = Math.abs(v);
  if (a >= 1e15) return v.toExponential(3);
  for (const [n, u] of [[1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k']]) {
    if (a >= n) return +(v / n).toPrecision(4) + u;
  }
  return String(+v.toPrecision(6));
}

export function formatBytes(v) {
  if (v === null || v === undefined) return '–';
  for (const [n, u] of [[2 ** 40, 'TiB'], [2 ** 30, 'GiB'], [2 ** 20, 'MiB'], [2 ** 10, 'KiB']]) {
    if (v >= n) return (v / n).toFixed(1) + ' ' + u;
  }
  return v + ' B';
}

// Fetches a path relative to the page (so a reverse proxy may mount the server under a prefix).
// Resolves to {ok, status, ms, text, json}; never rejects (a network error has status 0).
export async function request(path, init) {
  const t0 = performance.now();
  try {
    const r = await fetch(path, Object.assign({ credentials: 'same-origin' }, init));
    const text = await r.text();
    let json = null;
    try {
      json = JSON.parse(text);
    } catch (_) {
      // Not JSON (graphite-web answers errors in plain text): the caller reads `text`.
    }
    return { ok: r.ok, status: r.status, ms: performance.now() - t0, text, json };
  } catch (e) {
    return { ok: false, status: 0, ms: performance.now() - t0, text: String(e), json: null };
  }
}

// The query string of a list of [key, value] pairs (repeated keys allowed).
export function qs(pairs) {
  return pairs
    .filter(([, v]) => v !== undefined && v !== null && v !== '')
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`)
    .join('&');
}

// A colour per series, readable on white (Tableau 10, then darker variants).
const PALETTE = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1',
  '#ff9da7', '#9c755f', '#bab0ac', '#1f4e79', '#a0522d', '#2e7d32', '#6a1b9a', '#c62828'];

export function color(i) {
  return PALETTE[i % PALETTE.length];
}
