// The single page: the part of the URL after '#' names the page and its state
// ('#/query?lang=promql&q=up&start=now-1h'), so a link or a reload shows the same view.
import { request } from './util.js';
import * as query from './query.js';
import * as explore from './explore.js';
import * as status from './status.js';

const PAGES = { query, explore, status };
const main = document.getElementById('main');
let current = null;

// '#/query?a=1' -> ['query', URLSearchParams('a=1')]
function parseHash() {
  const h = location.hash.replace(/^#\/?/, '');
  const i = h.indexOf('?');
  const name = (i < 0 ? h : h.slice(0, i)) || 'query';
  return [PAGES[name] ? name : 'query', new URLSearchParams(i < 0 ? '' : h.slice(i + 1))];
}

// Writes a page's state to the URL; the hashchange that follows shows it.
export function navigate(name, params, replace) {
  const q = params.toString();
  const hash = `#/${name}${q ? '?' + q : ''}`;
  if (hash === location.hash) {
    route();
  } else if (replace) {
    history.replaceState(null, '', hash);
    route();
  } else {
    location.hash = hash;
  }
}

function route() {
  const [name, params] = parseHash();
  for (const a of document.querySelectorAll('nav a')) {
    a.classList.toggle('active', a.dataset.page === name);
  }
  document.body.dataset.page = name;
  if (!current || current.name !== name) {
    if (current && current.page.unmount) current.page.unmount();
    main.replaceChildren();
    current = { name, page: PAGES[name] };
    current.page.mount(main, (p, replace) => navigate(name, p, replace));
  }
  current.page.show(params);
}

window.addEventListener('hashchange', route);
route();

request('api/version').then((r) => {
  if (r.json && r.json.short_revision) {
    document.getElementById('version').textContent = `v${r.json.short_revision}`;
  }
});
