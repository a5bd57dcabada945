// The onnxstream page: plain DOM, no framework. Every string from a model or a file name
// goes through textContent, never innerHTML.
'use strict';

const params = new URLSearchParams(location.search);
// The token arrives in the URL's fragment (#token=...), which the browser sends to no server.
// The page keeps it for this tab (a reload finds it again) and sends it in a header to its
// own server only; it never goes in a URL or a cookie. The fragment is then taken out of the
// address bar (also when it comes back by a same-page navigation, which loads nothing), so
// that a copied URL does not carry it.
function tokenFromFragment() {
  const given = /(?:^#|&)token=([0-9a-f]+)/.exec(location.hash);
  if (!given) return null;
  sessionStorage.setItem('onnxstream-token', given[1]);
  history.replaceState(null, '', location.pathname + location.search);
  return given[1];
}
let token = tokenFromFragment() || sessionStorage.getItem('onnxstream-token') || '';
window.addEventListener('hashchange', () => { token = tokenFromFragment() || token; });
const withHeader = () => ({ 'X-Onnxstream-Token': token });
let actions = [];
let currentFolder = '';
let currentModel = '';

// ------------------------------------------------------------------ helpers

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') node.className = v;
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}

function bytes(n) {
  if (n === null || n === undefined) return '?';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return (i === 0 ? String(v) : v.toFixed(1)) + ' ' + units[i];
}

function seconds(s) {
  if (s < 60) return Math.ceil(s) + ' s';
  return Math.floor(s / 60) + ' min ' + Math.ceil(s % 60) + ' s';
}

function withQuery(path, query) {
  const q = new URLSearchParams(query || {}).toString();
  return q ? path + '?' + q : path;
}

async function api(path, query, options) {
  const response = await fetch(withQuery(path, query), Object.assign({ headers: withHeader() }, options || {}));
  let body;
  try { body = await response.json(); } catch (e) { body = { ok: false, error: { message: 'the server sent no answer (' + response.status + ')', hint: 'is onnxstream gui still running?' } }; }
  return body;
}

function errorBox(err) {
  const box = el('div', { class: 'error', role: 'alert' }, err.message || 'failed');
  if (err.hint) box.append(el('span', { class: 'hint' }, err.hint));
  return box;
}

function setLocation(path) {
  history.replaceState(null, '', path ? '?' + new URLSearchParams({ path }).toString() : location.pathname);
}

// A job's server-sent events, read with fetch (an EventSource cannot send the token's
// header). Calls onEvent with each event until the stream ends; throws when it breaks.
async function followEvents(id, onEvent) {
  const response = await fetch('/api/jobs/' + encodeURIComponent(id) + '/events', { headers: withHeader() });
  if (!response.ok || !response.body) throw new Error('no event stream (' + response.status + ')');
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      if (event.startsWith('data: ') && onEvent(JSON.parse(event.slice(6))) === false) {
        reader.cancel();
        return;
      }
    }
  }
}

// A download link cannot send a header: a click asks for a one-use ticket for the file (with
// the token in a header) and follows the link with it.
function downloadLink(path) {
  const href = withQuery('/api/file', { path });
  const link = el('a', { href, download: '' }, 'download');
  link.addEventListener('click', async (event) => {
    event.preventDefault();
    const issued = await api('/api/tickets', { path }, { method: 'POST' });
    if (!issued.ok) { link.replaceWith(errorBox(issued.error)); return; }
    const once = el('a', { href: withQuery('/api/file', { path, ticket: issued.ticket }), download: '' });
    document.body.append(once);
    once.click();
    once.remove();
  });
  return link;
}

function parentOf(path) {
  const i = path.lastIndexOf('/');
  return i < 0 ? '' : path.slice(0, i);
}

// ------------------------------------------------------------------ files

async function showFolder(path) {
  const body = await api('/api/list', { path });
  const list = document.getElementById('entries');
  list.replaceChildren();
  if (!body.ok) { list.append(el('li', {}, errorBox(body.error))); return; }
  currentFolder = body.path;
  document.getElementById('folder-name').textContent = '/' + body.path;
  if (body.path) {
    list.append(el('li', { class: 'folder' }, el('button', { type: 'button', onclick: () => showFolder(parentOf(body.path)) },
      el('span', { class: 'name' }, '..'), el('span', { class: 'size' }, ''))));
  }
  for (const e of body.entries) {
    const rel = body.path ? body.path + '/' + e.name : e.name;
    const isModel = !e.folder && e.name.endsWith('.onnx');
    if (e.outside) {
      list.append(el('li', { class: 'outside' }, el('button', { type: 'button', disabled: '', title: 'a link out of the served folder: not followed' },
        el('span', { class: 'name' }, e.name), el('span', { class: 'size' }, 'link out'))));
      continue;
    }
    const button = el('button', { type: 'button', title: rel },
      el('span', { class: 'name' }, e.name), el('span', { class: 'size' }, e.folder ? '' : bytes(e.size)));
    button.addEventListener('click', () => {
      if (e.folder) showFolder(rel);
      else if (isModel) openModel(rel);
      else document.getElementById('path-box').value = rel;
    });
    list.append(el('li', { class: e.folder ? 'folder' : isModel ? 'model' : 'file' }, button));
  }
}

// ------------------------------------------------------------------ a model

// How a data file was found, for people (the report's found_by is a stable name; the
// server words its text reports the same way: actions.cpp page_found).
const foundWords = {
  data_flag: 'the data file you gave',
  model_folder: 'next to the model',
  data_dir: 'in the folder you gave',
  data_dir_file_name: 'by its file name, in the folder you gave',
  file_name_in_model_folder: 'guessed: a file of that name next to the model',
  common_name: 'guessed: a usual name for a model\'s data',
  only_data_file: 'guessed: the only data file next to the model',
};

function foundText(f) { return foundWords[f.found_by] || f.found_by; }

function fileStatus(f) {
  if (!f.path) return ['missing', 'status-missing'];
  if (f.problems.some((p) => /short|truncat/i.test(p))) return ['truncated', 'status-truncated'];
  if (f.problems.length) return ['problem', 'status-problem'];
  return ['found', 'status-found'];
}

function valueRow(v) {
  const shape = v.shape === null ? '' : '[' + v.shape.join(', ') + ']';
  return el('tr', {}, el('td', { class: 'mono' }, v.name), el('td', { class: 'mono' }, (v.type || '?') + shape));
}

async function openModel(path) {
  currentModel = path;
  document.getElementById('path-box').value = path;
  setLocation(path);
  const section = document.getElementById('model');
  section.replaceChildren(el('p', {}, 'reading ' + path + ' ...'));
  const r = await api('/api/inspect', { path });
  if (currentModel !== path) return;
  section.replaceChildren();
  // ok false with a report: the model was read, its problems are listed in it.
  if (r.error) { section.append(el('h2', {}, path), errorBox(r.error)); return; }
  const view = document.getElementById('model-template').content.cloneNode(true);
  const q = (s) => view.querySelector(s);
  q('.model-path').textContent = r.path + '  (' + bytes(r.file_size) + ')';
  const producer = r.producer_name ? ', produced by ' + r.producer_name + (r.producer_version ? ' ' + r.producer_version : '') : '';
  q('.model-summary').textContent = 'IR version ' + r.ir_version + producer + '; opsets ' +
    r.opsets.map((o) => o.domain + ' ' + o.version).join(', ') + (r.graph_name ? '; graph ' + r.graph_name : '') +
    '; ' + r.nodes + ' nodes, ' + r.subgraphs + ' subgraphs, ' + r.functions.length + ' functions';
  for (const p of r.problems) q('.problems').append(el('div', { class: 'problem' }, p));
  const tbody = q('.data-files tbody');
  if (!r.external_data.length) tbody.append(el('tr', {}, el('td', { colspan: '6' }, 'no external data: every tensor is inside the .onnx')));
  for (const f of r.external_data) {
    const [status, cls] = fileStatus(f);
    const row = el('tr', {}, el('td', { class: 'mono' }, f.location), el('td', { class: cls }, status),
      el('td', { class: 'mono' }, f.path ? f.path + ' (' + foundText(f) + ')' : ''), el('td', { class: 'num' }, f.tensors),
      el('td', { class: 'num' }, bytes(f.bytes_needed)), el('td', { class: 'num' }, f.size === null ? '' : bytes(f.size)));
    tbody.append(row);
    if (f.problems.length || f.hint) {
      const box = el('div', { class: 'problem' });
      for (const p of f.problems) box.append(el('div', {}, p));
      if (f.hint) box.append(el('span', { class: 'hint' }, f.hint));
      tbody.append(el('tr', {}, el('td', { colspan: '6' }, box)));
    }
  }
  q('.merged').textContent = r.merged_size === null ? 'merged size: unknown until the problems above are fixed'
    : 'merged: ' + bytes(r.merged_size) + ' (' + r.merged_size + ' bytes), ' +
      (r.fits_2gb ? 'fits in one .onnx file (under 2 GB)' : 'over the 2 GB limit: keep external data (Repack)');
  q('.merged').className = 'merged ' + (r.merged_size !== null && r.fits_2gb ? 'ok' : 'status-problem');
  for (const v of r.inputs) q('.inputs tbody').append(valueRow(v));
  for (const v of r.outputs) q('.outputs tbody').append(valueRow(v));
  q('.ops').textContent = Object.entries(r.op_types).map(([op, n]) => op + ' ' + n).join(', ') || 'none';
  const tensors = q('.tensors tbody');
  for (const [type, c] of Object.entries(r.tensors_by_type))
    tensors.append(el('tr', {}, el('td', {}, type), el('td', { class: 'num' }, c.tensors), el('td', { class: 'num' }, bytes(c.bytes))));
  for (const [storage, c] of Object.entries(r.tensors_by_storage))
    tensors.append(el('tr', {}, el('td', {}, 'stored ' + storage), el('td', { class: 'num' }, c.tensors), el('td', { class: 'num' }, bytes(c.bytes))));
  const bar = q('.actions');
  const form = q('.action-form');
  const jobs = q('.jobs');
  for (const a of actions) {
    if (a.name === 'analyze') continue;  // the model view runs it itself (showAnalyze)
    const b = el('button', { type: 'button', 'aria-pressed': 'false', title: a.summary, 'data-action': a.name }, a.title);
    b.addEventListener('click', () => {
      for (const other of bar.children) other.setAttribute('aria-pressed', String(other === b));
      showForm(form, a, path, jobs);
    });
    bar.append(b);
  }
  const analyzeBox = q('.analyze');
  section.append(view);
  setupTabs(section, path);
  showAnalyze(path, analyzeBox);
}

// analyze runs as a job (a large model takes a minute): progress and Cancel in the box,
// then the report. The server keeps the result per file, so opening the model again
// answers at once.
let analyzing = null;  // the job id of the model view's analyze, cancelled when another model opens

async function showAnalyze(path, box) {
  if (analyzing) api('/api/jobs/' + analyzing + '/cancel', {}, { method: 'POST' });
  analyzing = null;
  const started = await api('/api/jobs', {}, { method: 'POST', body: new URLSearchParams({ action: 'analyze', path }) });
  if (!started.ok) { box.replaceChildren(errorBox(started.error)); return; }
  analyzing = started.id;
  const progress = el('progress', { max: '1', value: '0' });
  const detail = el('span', { class: 'detail' }, 'analyzing ...');
  const cancel = el('button', { type: 'button' }, 'Cancel');
  cancel.addEventListener('click', async () => {
    cancel.disabled = true;
    await api('/api/jobs/' + started.id + '/cancel', {}, { method: 'POST' });
  });
  box.replaceChildren(el('div', { class: 'line' }, detail, cancel), progress);
  let last = null;
  const onEvent = (e) => {
    last = e;
    if (e.state !== 'running') return false;
    if (e.total > 0) { progress.max = e.total; progress.value = e.done; }
    detail.textContent = 'analyzing ...' + (e.total > 0 ? ' pass ' + e.done + ' of ' + e.total : '') +
      (e.tensor ? ' (' + e.tensor + ')' : '');
    return true;
  };
  try { await followEvents(started.id, onEvent); } catch (err) { /* shown below */ }
  if (analyzing === started.id) analyzing = null;
  if (!last || last.state === 'running') {
    box.replaceChildren(el('p', { class: 'detail' }, 'lost contact with the server; is onnxstream gui still running?'));
    return;
  }
  box.replaceChildren();
  if (last.state === 'cancelled') { box.append(el('p', { class: 'detail' }, 'analyze cancelled')); return; }
  if (last.state === 'failed') { box.append(errorBox(last.error)); return; }
  showAnalyzeReport(last.result, box);
}

function showAnalyzeReport(r, box) {
  // The categories overlap (a dead Identity is both): their node counts are not added up.
  // removable_nodes is what optimize removes, each node once.
  const list = el('ul', { class: 'findings' });
  for (const [key, t] of Object.entries(r.summary)) {
    if (typeof t !== 'object' || !t.count) continue;
    list.append(el('li', {}, key.replace(/_/g, ' ') + ': ' + t.count + (t.nodes ? ', ' + t.nodes + ' nodes' : '') +
      (t.bytes ? ', ' + bytes(t.bytes) : '')));
  }
  const removable = r.summary.removable_nodes;
  if (!list.children.length && !removable) box.append(el('p', { class: 'ok' }, 'nothing dead, duplicated or no-op found'));
  else {
    box.append(el('p', { class: 'removable' }, 'Optimize would remove ' + removable + ' of ' + r.nodes + ' nodes.'));
    if (list.children.length) box.append(el('p', {}, 'Found (a node may be in more than one line):'), list);
  }
  for (const w of r.warnings) box.append(el('div', { class: 'problem' }, w));
}

// ------------------------------------------------------------------ the model's views: graph and tensors

// The tabs of a model: Overview (the inspect report, the actions), Graph, Tensors. The
// graph's document (/api/graph) is fetched once, when Graph or Tensors is first opened.
function setupTabs(section, path) {
  const tabs = section.querySelectorAll('.tabs [role="tab"]');
  let graph = null;
  const load = () => {
    if (!graph) graph = loadGraph(path);
    return graph;
  };
  for (const tab of tabs) {
    tab.addEventListener('click', async () => {
      for (const other of tabs) other.setAttribute('aria-selected', String(other === tab));
      for (const name of ['overview', 'graph', 'tensors'])
        section.querySelector('.tab-' + name).hidden = name !== tab.dataset.tab;
      if (tab.dataset.tab === 'overview') return;
      const g = await load();
      if (currentModel !== path) return;
      if (tab.dataset.tab === 'graph') showGraph(section.querySelector('.tab-graph'), g);
      else showTensors(section.querySelector('.tab-tensors'), g);
    });
  }
}

async function loadGraph(path) {
  const started = performance.now();
  const doc = await api('/api/graph', { path });
  const fetched = performance.now();
  if (!doc.ok) return { error: doc.error || { message: 'the graph could not be read' } };
  const g = prepareGraph(doc);
  g.fetchMs = Math.round(fetched - started);
  g.prepareMs = Math.round(performance.now() - fetched);
  return g;
}

// A node's name scopes, as torch and Paddle exports write them: '/model/layers.3/attn/MatMul'
// is in model > layers.3 > attn. A name without '/' is in the graph itself.
function scopeParts(name) {
  if (!name || name.indexOf('/') < 0) return [];
  const parts = name.split('/').filter((p) => p !== '');
  parts.pop();
  return parts;
}

function shapeText(shape) { return shape === null ? '' : '[' + shape.join(', ') + ']'; }

function prepareGraph(doc) {
  const nodes = doc.nodes;
  const values = doc.values;
  const producer = new Int32Array(values.length).fill(-1);
  const firstUse = new Int32Array(values.length).fill(-1);
  nodes.forEach((n, i) => {
    for (const v of n[4]) if (v >= 0) producer[v] = i;
    for (const v of n[3]) if (v >= 0 && firstUse[v] < 0) firstUse[v] = i;
  });
  const weightOf = new Map();  // value -> initializer row
  for (const t of doc.initializers) if (t[1] >= 0) weightOf.set(t[1], t);
  const root = { id: 0, name: '', path: '', parent: null, children: new Map(), kids: [], nodes: [], count: 0, first: -1 };
  const groups = [root];
  const groupOf = new Int32Array(nodes.length);
  nodes.forEach((n, i) => {
    let g = root;
    for (const part of scopeParts(n[0])) {
      let c = g.children.get(part);
      if (!c) {
        c = { id: groups.length, name: part, path: g.path + '/' + part, parent: g, children: new Map(), kids: [], nodes: [], count: 0, first: i };
        g.children.set(part, c);
        g.kids.push(c);
        groups.push(c);
      }
      g = c;
    }
    g.nodes.push(i);
    groupOf[i] = g.id;
    for (let a = g; a; a = a.parent) a.count++;
  });
  // What is open: small graphs whole; large ones level by level while the drawing stays small.
  const expanded = new Set([0]);
  const budget = 250;
  let visible = root.kids.length + root.nodes.length;
  for (let queue = root.kids.slice(); queue.length;) {
    queue.sort((a, b) => a.count - b.count);
    const g = queue.shift();
    const more = g.kids.length + g.nodes.length - 1;
    if (visible + more > budget && !(visible === 1 && g.parent === root)) continue;
    expanded.add(g.id);
    visible += more;
    queue.push(...g.kids);
  }
  return { doc, nodes, values, producer, firstUse, weightOf, groups, groupOf, expanded, selected: null, view: null, search: null };
}

// ---- layout: layers top to bottom (longest path over the items in file order), order
// within a layer by barycentres, x pulled toward the items above. Built in: no library.

const NODE_H = 34;
const BADGE_H = 14;
const LAYER_GAP = 46;
const ITEM_GAP = 22;

function itemWidth(label, sub) { return Math.max(70, 16 + 7.2 * Math.max(label.length, 0.85 * Math.min(sub.length, 40))); }

function layoutGraph(G) {
  const { nodes, groups, groupOf, expanded, producer } = G;
  const items = [];
  const itemOfGroup = new Int32Array(groups.length).fill(-1);
  for (const g of groups) {
    if (g.id === 0) continue;
    const parentItem = itemOfGroup[g.parent.id];
    if (parentItem >= 0) itemOfGroup[g.id] = parentItem;
    else if (!expanded.has(g.parent.id)) itemOfGroup[g.id] = itemOfGroup[g.parent.id];
    else if (!expanded.has(g.id)) {
      itemOfGroup[g.id] = items.length;
      items.push({ kind: 'group', group: g, first: g.first, label: g.name, sub: g.count + ' nodes' });
    }
  }
  const itemOfNode = new Int32Array(nodes.length);
  const inputItem = new Map();
  for (const v of G.doc.inputs) {
    if (v < 0 || G.values[v][1] !== 'input') continue;
    inputItem.set(v, items.length);
    items.push({ kind: 'input', value: v, first: -1, label: G.values[v][0], sub: G.values[v][2] + shapeText(G.values[v][3]) });
  }
  nodes.forEach((n, i) => {
    const gi = itemOfGroup[groupOf[i]];
    if (gi >= 0) { itemOfNode[i] = gi; return; }
    itemOfNode[i] = items.length;
    const weights = n[3].filter((v) => v >= 0 && G.weightOf.has(v)).map((v) => G.weightOf.get(v));
    items.push({ kind: 'node', node: i, first: i, label: G.doc.ops[n[1]], sub: n[0], weights });
  });
  for (const v of G.doc.outputs) {
    if (v < 0) continue;
    items.push({ kind: 'output', value: v, first: nodes.length, label: G.values[v][0], sub: G.values[v][2] + shapeText(G.values[v][3]) });
  }
  const edges = new Map();
  const link = (from, to, v) => {
    if (from === to) return;
    const key = from * 4194304 + to;
    const e = edges.get(key);
    if (e) e.count++;
    else edges.set(key, { from, to, value: v, count: 1 });
  };
  nodes.forEach((n, i) => {
    const to = itemOfNode[i];
    for (const v of n[3]) {
      if (v < 0) continue;
      if (producer[v] >= 0) link(itemOfNode[producer[v]], to, v);
      else if (inputItem.has(v)) link(inputItem.get(v), to, v);
    }
  });
  items.forEach((it, k) => {
    if (it.kind !== 'output') return;
    const v = it.value;
    if (producer[v] >= 0) link(itemOfNode[producer[v]], k, v);
    else if (inputItem.has(v)) link(inputItem.get(v), k, v);
  });
  const edgeList = Array.from(edges.values());
  // Layers: file order is a topological order of the nodes; an edge against it (a group
  // read before it writes) is drawn but does not push the layering.
  const order = items.map((_, k) => k).sort((a, b) => items[a].first - items[b].first);
  const rank = new Int32Array(items.length);
  order.forEach((k, r) => { rank[k] = r; });
  const incoming = items.map(() => []);
  const outgoing = items.map(() => []);
  for (const e of edgeList) {
    if (rank[e.from] < rank[e.to]) { incoming[e.to].push(e.from); outgoing[e.from].push(e.to); }
  }
  const layer = new Int32Array(items.length);
  for (const k of order) for (const p of incoming[k]) layer[k] = Math.max(layer[k], layer[p] + 1);
  // Outputs go to the last layer.
  let depth = 0;
  for (const k of order) depth = Math.max(depth, layer[k]);
  items.forEach((it, k) => { if (it.kind === 'output') layer[k] = depth; });
  const layers = [];
  for (const k of order) (layers[layer[k]] = layers[layer[k]] || []).push(k);
  const pos = new Float64Array(items.length);
  const renumber = (row) => row.forEach((k, i) => { pos[k] = i; });
  layers.forEach((row) => row && renumber(row));
  const sweep = (row, neighbours) => {
    const bary = new Map();
    for (const k of row) {
      const ns = neighbours[k];
      bary.set(k, ns.length ? ns.reduce((s, n) => s + pos[n], 0) / ns.length : pos[k]);
    }
    row.sort((a, b) => bary.get(a) - bary.get(b));
    renumber(row);
  };
  for (let round = 0; round < 3; round++) {
    for (let l = 1; l < layers.length; l++) if (layers[l]) sweep(layers[l], incoming);
    for (let l = layers.length - 2; l >= 0; l--) if (layers[l]) sweep(layers[l], outgoing);
  }
  let y = 0;
  let maxX = 0;
  let minX = 0;
  for (const row of layers) {
    if (!row) continue;
    let h = 0;
    for (const k of row) {
      const it = items[k];
      it.w = itemWidth(it.label, it.sub);
      it.h = NODE_H + (it.weights && it.weights.length ? BADGE_H + 4 : 0);
      h = Math.max(h, it.h);
    }
    // x: toward the mean of the items above, in order, never overlapping.
    const want = row.map((k) => {
      const ps = incoming[k];
      return ps.length ? ps.reduce((s, p) => s + items[p].x, 0) / ps.length : null;
    });
    let total = row.reduce((s, k) => s + items[k].w, 0) + ITEM_GAP * (row.length - 1);
    let x = -total / 2;
    row.forEach((k, i) => {
      const it = items[k];
      const left = want[i] === null ? x : Math.max(x, want[i] - it.w / 2);
      it.x = left + it.w / 2;
      x = left + it.w + ITEM_GAP;
    });
    const known = row.filter((_, i) => want[i] !== null);
    if (known.length) {
      const shift = known.reduce((s, k) => s + items[k].x, 0) / known.length -
        known.reduce((s, k) => s + want[row.indexOf(k)], 0) / known.length;
      for (const k of row) items[k].x -= shift;
    }
    for (const k of row) {
      items[k].y = y + h / 2;
      minX = Math.min(minX, items[k].x - items[k].w / 2);
      maxX = Math.max(maxX, items[k].x + items[k].w / 2);
    }
    y += h + LAYER_GAP;
  }
  return { items, edges: edgeList, itemOfNode, bounds: { x: minX - 20, y: -20, w: maxX - minX + 40, h: y + 40 } };
}

// ---- drawing

const SVG = 'http://www.w3.org/2000/svg';
function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

function cut(text, n) { return text.length > n ? text.slice(0, n - 1) + '…' : text; }

function showGraph(panel, G) {
  if (G.error) { panel.replaceChildren(errorBox(G.error)); return; }
  if (!G.bound) {
    G.bound = true;
    G.panel = panel;
    panel.querySelector('.graph-fit').addEventListener('click', () => fitView(G));
    panel.querySelector('.graph-collapse').addEventListener('click', () => {
      G.expanded = new Set([0]);
      if (G.groups.length === 1 || G.groups[0].kids.length + G.groups[0].nodes.length === 1)
        for (const k of G.groups[0].kids) G.expanded.add(k.id);
      drawGraph(G);
      fitView(G);
    });
    panel.querySelector('.graph-search').addEventListener('submit', (event) => {
      event.preventDefault();
      searchGraph(G, event.target.elements.q.value.trim());
    });
    setupPanZoom(G, panel.querySelector('.graph-canvas'));
    drawGraph(G);
    fitView(G);
  }
}

function drawGraph(G) {
  const started = performance.now();
  const L = layoutGraph(G);
  G.layout = L;
  const canvas = G.panel.querySelector('.graph-canvas');
  const root = svg('svg', { class: 'graph-svg', role: 'img', 'aria-label': 'the graph' });
  const world = svg('g', { class: 'world' });
  root.append(world);
  const edgeLayer = svg('g', { class: 'edges' });
  const itemLayer = svg('g', { class: 'items' });
  world.append(edgeLayer, itemLayer);
  const labels = L.items.length <= 600;
  for (const e of L.edges) {
    const a = L.items[e.from];
    const b = L.items[e.to];
    const x1 = a.x, y1 = a.y + a.h / 2, x2 = b.x, y2 = b.y - b.h / 2;
    const back = y2 <= y1;
    const bend = back ? 60 : Math.max(20, (y2 - y1) / 2);
    const d = back ? `M${x1},${y1} C${x1 + 80},${y1 + bend} ${x2 + 80},${y2 - bend} ${x2},${y2}`
      : `M${x1},${y1} C${x1},${y1 + bend} ${x2},${y2 - bend} ${x2},${y2}`;
    edgeLayer.append(svg('path', { d, class: back ? 'edge back' : 'edge', 'marker-end': '' }));
    const shape = G.values[e.value][3];
    if (labels && shape !== null && e.count === 1) {
      edgeLayer.append(svg('text', { x: (x1 + x2) / 2 + 4, y: (y1 + y2) / 2 + 3, class: 'edge-label' }, cut(shapeText(shape), 28)));
    }
  }
  L.items.forEach((it, k) => {
    const g = svg('g', { class: 'item ' + it.kind, transform: `translate(${it.x - it.w / 2},${it.y - it.h / 2})`, 'data-item': k });
    if (it.kind === 'node') g.setAttribute('data-node', it.node);
    if (it.kind === 'group') g.setAttribute('data-group', it.group.id);
    g.append(svg('rect', { width: it.w, height: it.h, rx: it.kind === 'group' ? 3 : 6 }));
    g.append(svg('text', { x: 8, y: 14, class: 'label' }, (it.kind === 'group' ? '+ ' : '') + cut(it.label, 40)));
    g.append(svg('text', { x: 8, y: 27, class: 'sub' }, cut(it.sub, 40)));
    if (it.weights && it.weights.length) {
      let x = 8;
      for (const t of it.weights.slice(0, 3)) {
        const text = bytes(t[4]);
        const w = 10 + text.length * 6;
        const badge = svg('g', { class: 'badge', transform: `translate(${x},${NODE_H - 4})` });
        badge.append(svg('title', {}, t[0] + ': ' + t[2] + shapeText(t[3].map(String)) + ', ' + bytes(t[4])));
        badge.append(svg('rect', { width: w, height: BADGE_H, rx: 3 }), svg('text', { x: 5, y: 10 }, text));
        g.append(badge);
        x += w + 4;
      }
      if (it.weights.length > 3) g.append(svg('text', { x: x + 2, y: NODE_H + 6, class: 'sub' }, '+' + (it.weights.length - 3)));
    }
    g.addEventListener('click', (event) => {
      event.stopPropagation();
      if (it.kind === 'group') {
        G.expanded.add(it.group.id);
        G.selected = { group: it.group.id };
        drawGraph(G);
        const first = G.layout.itemOfNode[it.group.first];
        centerOn(G, G.layout.items[first]);
      } else if (it.kind === 'node') {
        select(G, it.node);
      }
    });
    itemLayer.append(g);
  });
  canvas.replaceChildren(root);
  G.svg = root;
  G.world = world;
  applyView(G);
  markSelected(G);
  const ms = Math.round(performance.now() - started);
  const shownNodes = L.items.filter((it) => it.kind === 'node').length;
  const shownGroups = L.items.filter((it) => it.kind === 'group').length;
  canvas.dataset.nodes = String(G.nodes.length);
  canvas.dataset.shownNodes = String(shownNodes);
  canvas.dataset.groups = String(shownGroups);
  canvas.dataset.drawMs = String(ms);
  canvas.dataset.fetchMs = String(G.fetchMs);
  G.panel.querySelector('.graph-status').textContent = G.nodes.length + ' nodes (' + G.doc.nodes_total + ' with subgraphs); showing ' +
    shownNodes + ' nodes and ' + shownGroups + ' collapsed groups; drawn in ' + ms + ' ms';
  if (G.selected && G.selected.group !== undefined) showGroupDetails(G, G.groups[G.selected.group]);
}

function setupPanZoom(G, canvas) {
  G.view = { scale: 1, tx: 0, ty: 0 };
  let drag = null;
  canvas.addEventListener('wheel', (event) => {
    event.preventDefault();
    const r = canvas.getBoundingClientRect();
    const px = event.clientX - r.left;
    const py = event.clientY - r.top;
    const factor = Math.exp(-event.deltaY * 0.0015);
    const v = G.view;
    const scale = Math.min(4, Math.max(0.005, v.scale * factor));
    v.tx = px - (px - v.tx) * (scale / v.scale);
    v.ty = py - (py - v.ty) * (scale / v.scale);
    v.scale = scale;
    applyView(G);
  }, { passive: false });
  canvas.addEventListener('pointerdown', (event) => {
    if (event.button !== 0) return;
    drag = { x: event.clientX, y: event.clientY, tx: G.view.tx, ty: G.view.ty };
  });
  window.addEventListener('pointermove', (event) => {
    if (!drag) return;
    G.view.tx = drag.tx + event.clientX - drag.x;
    G.view.ty = drag.ty + event.clientY - drag.y;
    applyView(G);
  });
  window.addEventListener('pointerup', () => { drag = null; });
  canvas.addEventListener('keydown', (event) => {
    const step = 60;
    const moves = { ArrowLeft: [step, 0], ArrowRight: [-step, 0], ArrowUp: [0, step], ArrowDown: [0, -step] };
    if (moves[event.key]) { G.view.tx += moves[event.key][0]; G.view.ty += moves[event.key][1]; applyView(G); event.preventDefault(); }
    else if (event.key === '+' || event.key === '-') {
      G.view.scale *= event.key === '+' ? 1.25 : 0.8;
      applyView(G);
    } else if (event.key === 'f') fitView(G);
  });
}

function applyView(G) {
  if (!G.world) return;
  const v = G.view;
  G.world.setAttribute('transform', `translate(${v.tx},${v.ty}) scale(${v.scale})`);
}

function fitView(G) {
  const canvas = G.panel.querySelector('.graph-canvas');
  const b = G.layout.bounds;
  const W = canvas.clientWidth || 800;
  const H = canvas.clientHeight || 600;
  // A tall graph is fitted to its width (then read by scrolling down), not shrunk to dots.
  const scale = Math.min(1.2, W / b.w, Math.max(H / b.h, Math.min(0.6, W / b.w)));
  G.view = { scale, tx: (W - b.w * scale) / 2 - b.x * scale, ty: 10 - b.y * scale };
  applyView(G);
}

function centerOn(G, it) {
  if (!it) return;
  const canvas = G.panel.querySelector('.graph-canvas');
  const scale = Math.max(G.view.scale, 0.8);
  G.view = { scale, tx: canvas.clientWidth / 2 - it.x * scale, ty: canvas.clientHeight / 2 - it.y * scale };
  applyView(G);
}

function markSelected(G) {
  if (!G.svg) return;
  for (const old of G.svg.querySelectorAll('.item.selected')) old.classList.remove('selected');
  if (G.selected && G.selected.node !== undefined) {
    const it = G.svg.querySelector(`.item[data-node="${G.selected.node}"]`);
    if (it) it.classList.add('selected');
  }
}

// Opens every group around node `i`, draws, selects it and brings it into view.
function select(G, i) {
  let redraw = false;
  for (let g = G.groups[G.groupOf[i]]; g; g = g.parent) if (!G.expanded.has(g.id)) { G.expanded.add(g.id); redraw = true; }
  G.selected = { node: i };
  if (redraw) drawGraph(G);
  markSelected(G);
  centerOn(G, G.layout.items[G.layout.itemOfNode[i]]);
  showNodeDetails(G, i);
}

function searchGraph(G, query) {
  const status = G.panel.querySelector('.graph-status');
  if (!query) return;
  const started = performance.now();
  if (!G.search || G.search.query !== query) {
    const q = query.toLowerCase();
    const exact = [];
    const partial = [];
    G.nodes.forEach((n, i) => {
      const name = n[0].toLowerCase();
      if (name === q || G.doc.ops[n[1]].toLowerCase() === q) exact.push(i);
      else if (name.includes(q)) partial.push(i);
    });
    G.values.forEach((v, k) => {
      const name = v[0].toLowerCase();
      if (name !== q && !name.includes(q)) return;
      const at = G.producer[k] >= 0 ? G.producer[k] : G.firstUse[k];
      if (at >= 0) (name === q ? exact : partial).push(at);
    });
    const seen = new Set();
    G.search = { query, matches: exact.concat(partial).filter((i) => !seen.has(i) && seen.add(i)), at: -1 };
  }
  const s = G.search;
  if (!s.matches.length) { status.textContent = 'nothing named ' + query; return; }
  s.at = (s.at + 1) % s.matches.length;
  select(G, s.matches[s.at]);
  G.panel.querySelector('.graph-canvas').dataset.searchMs = String(Math.round(performance.now() - started));
  status.textContent = 'match ' + (s.at + 1) + ' of ' + s.matches.length + ' for ' + query + ' (Find again for the next)';
}

function valueCells(G, v) {
  if (v < 0) return [el('td', { class: 'mono' }, '(none)'), el('td', {}, ''), el('td', {}, '')];
  const [name, kind, type, shape] = G.values[v];
  const w = G.weightOf.get(v);
  let where = kind;
  if (w) {
    const file = w[6] >= 0 ? G.doc.files[w[6]] + ' at offset ' + w[7] : '';
    where = 'weight ' + w[2] + shapeText(w[3].map(String)) + ', ' + bytes(w[4]) + ', ' + (w[5] === 'external' ? 'in ' + file : w[5] === 'raw' || w[5] === 'typed' ? 'embedded (' + w[5] + ')' : w[5]);
  }
  return [el('td', { class: 'mono' }, name), el('td', { class: 'mono shape' }, (type || '?') + shapeText(shape)), el('td', { class: 'where' }, where)];
}

function showNodeDetails(G, i) {
  const n = G.nodes[i];
  const box = G.panel.querySelector('.graph-details');
  const table = (rows) => el('table', {}, el('tbody', {}, ...rows));
  const parts = [el('h4', {}, G.doc.ops[n[1]] + (G.doc.domains[n[2]] ? ' (' + G.doc.domains[n[2]] + ')' : '')),
    el('p', { class: 'mono node-name' }, n[0] || '(no name)')];
  const scopes = [];
  for (let g = G.groups[G.groupOf[i]]; g && g.id !== 0; g = g.parent) scopes.unshift(g);
  if (scopes.length) {
    const line = el('p', { class: 'scopes' }, 'in ');
    for (const g of scopes) {
      const b = el('button', { type: 'button', class: 'link', title: 'collapse this group' }, g.name);
      b.addEventListener('click', () => { G.expanded.delete(g.id); G.selected = { group: g.id }; drawGraph(G); centerOn(G, G.layout.items[G.layout.itemOfNode[i]]); });
      line.append(b, ' / ');
    }
    parts.push(line);
  }
  if (n[6].length) parts.push(el('h5', {}, 'Attributes'), table(n[6].map((a) => el('tr', {}, el('td', { class: 'mono' }, a[0]), el('td', {}, a[1]), el('td', { class: 'mono' }, a[2])))));
  parts.push(el('h5', {}, 'Inputs'), table(n[3].map((v) => el('tr', { class: 'input' }, ...valueCells(G, v)))));
  parts.push(el('h5', {}, 'Outputs'), table(n[4].map((v) => el('tr', { class: 'output' }, ...valueCells(G, v)))));
  if (n[5]) parts.push(el('p', {}, n[5] + ' subgraph' + (n[5] > 1 ? 's' : '') + ' (If / Loop / Scan bodies)'));
  box.replaceChildren(...parts);
}

function showGroupDetails(G, g) {
  const box = G.panel.querySelector('.graph-details');
  const ops = new Map();
  let weights = 0;
  const visit = (h) => {
    for (const i of h.nodes) {
      const op = G.doc.ops[G.nodes[i][1]];
      ops.set(op, (ops.get(op) || 0) + 1);
      for (const v of G.nodes[i][3]) if (v >= 0 && G.weightOf.has(v)) weights += G.weightOf.get(v)[4];
    }
    for (const k of h.kids) visit(k);
  };
  visit(g);
  const top = Array.from(ops.entries()).sort((a, b) => b[1] - a[1]).slice(0, 12);
  box.replaceChildren(el('h4', {}, 'group ' + g.name), el('p', { class: 'mono' }, g.path),
    el('p', {}, g.count + ' nodes, weights read: ' + bytes(weights)),
    el('p', {}, top.map(([op, c]) => op + ' ' + c).join(', ')));
}

// ---- the tensor table and where the bytes are

function tensorScope(name) {
  const parts = name.replace(/^\/+/, '').split(/[/.]|::/);
  return parts[0] || name;
}

function barChart(title, totals, all) {
  const box = el('div', { class: 'bars' }, el('h4', {}, title));
  const rows = Array.from(totals.entries()).sort((a, b) => b[1] - a[1]);
  const shown = rows.slice(0, 10);
  const rest = rows.slice(10).reduce((s, r) => s + r[1], 0);
  if (rest > 0) shown.push(['(' + (rows.length - 10) + ' others)', rest]);
  for (const [label, n] of shown) {
    const pct = all > 0 ? (100 * n) / all : 0;
    const bar = el('span', { class: 'bar' });
    bar.style.width = Math.max(0.5, pct).toFixed(1) + '%';
    box.append(el('div', { class: 'bar-row' }, el('span', { class: 'bar-label mono', title: label }, label),
      el('span', { class: 'bar-track' }, bar), el('span', { class: 'bar-value' }, pct.toFixed(1) + ' % · ' + bytes(n))));
  }
  return box;
}

function showTensors(panel, G) {
  if (G.error) { panel.replaceChildren(errorBox(G.error)); return; }
  if (panel.dataset.ready) return;
  panel.dataset.ready = '1';
  const rows = G.doc.initializers.map((t) => ({
    name: t[0], dtype: t[2], dims: t[3], shape: shapeText(t[3].map(String)), bytes: t[4],
    storage: t[5] === 'external' && t[6] >= 0 ? 'external: ' + G.doc.files[t[6]] + ' @ ' + t[7] : t[5] === 'raw' || t[5] === 'typed' ? 'embedded (' + t[5] + ')' : t[5],
  }));
  const all = rows.reduce((s, r) => s + r.bytes, 0);
  const byScope = new Map();
  const byType = new Map();
  for (const r of rows) {
    byScope.set(tensorScope(r.name), (byScope.get(tensorScope(r.name)) || 0) + r.bytes);
    byType.set(r.dtype, (byType.get(r.dtype) || 0) + r.bytes);
  }
  panel.querySelector('.bytes-bars').replaceChildren(
    el('p', {}, rows.length + ' initializers, ' + bytes(all) + ' in all'),
    barChart('Bytes by top-level scope', byScope, all), barChart('Bytes by dtype', byType, all));
  const filter = panel.querySelector('.tensor-filter');
  const tbody = panel.querySelector('.tensor-table tbody');
  const count = panel.querySelector('.tensor-count');
  let key = 'bytes';
  let dir = -1;
  const limit = 2000;
  const render = () => {
    const q = filter.value.trim().toLowerCase();
    const shown = q ? rows.filter((r) => r.name.toLowerCase().includes(q) || r.dtype.toLowerCase() === q || r.storage.toLowerCase().includes(q)) : rows.slice();
    shown.sort((a, b) => {
      const x = key === 'shape' ? a.dims.reduce((p, d) => p * d, 1) : a[key];
      const y = key === 'shape' ? b.dims.reduce((p, d) => p * d, 1) : b[key];
      return (x < y ? -1 : x > y ? 1 : 0) * dir;
    });
    tbody.replaceChildren(...shown.slice(0, limit).map((r) => el('tr', {},
      el('td', { class: 'mono' }, r.name), el('td', {}, r.dtype), el('td', { class: 'mono' }, r.shape),
      el('td', { class: 'num', title: r.bytes + ' bytes' }, bytes(r.bytes)), el('td', { class: 'mono' }, r.storage))));
    count.textContent = shown.length > limit ? 'showing the first ' + limit + ' of ' + shown.length : shown.length + ' of ' + rows.length;
    for (const th of panel.querySelectorAll('.tensor-table th'))
      th.setAttribute('aria-sort', th.dataset.key === key ? (dir > 0 ? 'ascending' : 'descending') : 'none');
  };
  for (const th of panel.querySelectorAll('.tensor-table th')) {
    th.tabIndex = 0;
    const sort = () => {
      if (key === th.dataset.key) dir = -dir;
      else { key = th.dataset.key; dir = key === 'bytes' ? -1 : 1; }
      render();
    };
    th.addEventListener('click', sort);
    th.addEventListener('keydown', (e) => { if (e.key === 'Enter') sort(); });
  }
  filter.addEventListener('input', render);
  render();
}

// ------------------------------------------------------------------ actions and jobs

function showForm(form, a, path, jobs) {
  form.hidden = false;
  form.replaceChildren(el('p', { class: 'summary' }, a.title + ': ' + a.summary));
  // Every field comes from the library's parameter table: its label in words, the flag it
  // is on the command line in small print, a select for a choice, the default shown.
  for (const f of a.fields) {
    const id = 'field-' + a.name + '-' + f.name;
    const label = el('label', { for: id }, f.label || f.name, ' ', el('code', { class: 'flag' }, '--' + f.name));
    if (f.kind === 'flag') {
      const box = el('input', { type: 'checkbox', id, name: f.name });
      form.append(label, el('span', {}, box));
    } else if (f.kind === 'choice') {
      const select = el('select', { id, name: f.name });
      for (const c of f.choices) select.append(el('option', { value: c }, c));
      select.value = f.default || f.choices[0];
      form.append(label, select);
    } else {
      const input = el('input', { type: 'text', id, name: f.name, autocomplete: 'off', spellcheck: 'false' });
      input.value = f.default;
      if (f.kind === 'path' || f.kind === 'model') input.placeholder = 'a path inside the served folder';
      form.append(label, input);
    }
    form.append(el('span', { class: 'help' }, f.help + (f.default && f.kind !== 'flag' ? ' (default ' + f.default + ')' : '')));
  }
  const run = el('button', { type: 'submit', class: 'primary' }, a.title);
  form.append(el('div', { class: 'buttons' }, run));
  form.onsubmit = async (event) => {
    event.preventDefault();
    const body = new URLSearchParams({ action: a.name, path });
    for (const f of a.fields) {
      const input = form.elements[f.name];
      if (f.kind === 'flag') { if (input.checked) body.set(f.name, '1'); }
      else if (input.value !== '') body.set(f.name, input.value);
    }
    const started = await api('/api/jobs', {}, { method: 'POST', body });
    // The form folds away: the job shows right under the buttons.
    form.hidden = true;
    for (const button of form.parentNode.querySelectorAll('.actions button')) button.setAttribute('aria-pressed', 'false');
    if (!started.ok) { jobs.prepend(el('div', { class: 'job' }, el('strong', {}, a.title + ' ' + path), errorBox(started.error))); return; }
    watchJob(started.id, a, path, jobs);
  };
  const first = form.querySelector('input');
  if (first) first.focus();
}

function watchJob(id, a, path, jobs) {
  const progress = el('progress', { max: '1', value: '0' });
  const detail = el('span', { class: 'detail' }, 'starting ...');
  const cancel = el('button', { type: 'button' }, 'Cancel');
  const box = el('div', { class: 'job', 'data-job': id },
    el('div', { class: 'line' }, el('strong', {}, a.title + ' ' + path), cancel), progress, detail);
  jobs.prepend(box);
  cancel.addEventListener('click', async () => {
    cancel.disabled = true;
    await api('/api/jobs/' + id + '/cancel', {}, { method: 'POST' });
  });
  const onEvent = (e) => {
    if (e.total > 0) { progress.max = e.total; progress.value = e.done; }
    const parts = [];
    if (e.stage) parts.push(e.stage);
    if (e.total > 0) parts.push(bytes(e.done) + ' of ' + bytes(e.total));
    if (e.tensor) parts.push('tensor ' + e.tensor);
    if (e.seconds_left !== undefined) parts.push(seconds(e.seconds_left) + ' left');
    detail.textContent = parts.join(' · ') || 'working ...';
    if (e.state === 'running') return true;
    cancel.remove();
    box.dataset.state = e.state;
    finishJob(box, progress, detail, e);
    return false;
  };
  const lost = () => {
    if (box.dataset.state) return;
    detail.textContent = 'lost contact with the server; is onnxstream gui still running?';
  };
  followEvents(id, onEvent).then(lost, lost);
}

function finishJob(box, progress, detail, e) {
  if (e.state === 'cancelled') {
    progress.remove();
    detail.textContent = 'cancelled after ' + seconds(e.elapsed) + '; nothing was written';
    return;
  }
  if (e.state === 'failed') {
    progress.remove();
    detail.textContent = 'failed after ' + seconds(e.elapsed);
    box.append(errorBox(e.error));
    return;
  }
  progress.value = progress.max;
  detail.textContent = (e.passed ? 'done' : 'done, with findings') + ' in ' + seconds(e.elapsed);
  detail.className = 'detail ' + (e.passed ? 'ok' : 'status-problem');
  if (e.outputs.length) {
    const table = el('table', { class: 'outputs-list' });
    for (const f of e.outputs) {
      const link = downloadLink(f.path);
      const open = el('button', { type: 'button' }, 'Open');
      open.addEventListener('click', () => openModel(f.path));
      table.append(el('tr', {}, el('td', { class: 'mono' }, f.path), el('td', { class: 'num' }, bytes(f.size)),
        el('td', {}, link), el('td', {}, f.path.endsWith('.onnx') ? open : '')));
    }
    box.append(table);
    showFolder(currentFolder);
  }
  const r = e.result;
  const notes = [];
  if (r.models) for (const m of r.models) if (m.warnings) notes.push(...m.warnings);
  if (r.warnings) notes.push(...r.warnings);
  if (r.problems && Array.isArray(r.problems)) for (const p of r.problems) notes.push(p.message || String(p));
  if (r.differences) for (const d of r.differences) notes.push(d.kind + ' ' + d.what + ' ' + d.name + ': ' + d.detail);
  if (r.equivalent !== undefined) notes.unshift(r.equivalent ? 'the models are equivalent' : 'the models differ');
  for (const n of notes) box.append(el('div', { class: 'detail' }, n));
  if (e.text) box.append(el('details', {}, el('summary', {}, 'report'), el('pre', {}, e.text)));
  box.append(el('details', {}, el('summary', {}, 'report (JSON)'), el('pre', {}, JSON.stringify(r, null, 2))));
}

// ------------------------------------------------------------------ dropping files

async function dropped(files) {
  const status = document.getElementById('drop-status');
  status.replaceChildren();
  let model = '';
  for (const file of files) {
    const line = el('div', {}, file.name + ': looking for it ...');
    status.append(line);
    const found = await api('/api/find', { name: file.name, size: String(file.size) });
    let path = '';
    if (found.ok && found.matches.length) {
      path = found.matches.find((m) => parentOf(m) === currentFolder) || found.matches[0];
      line.textContent = file.name + ': found at ' + path;
    } else {
      path = await upload(file, line);
    }
    if (path && file.name.endsWith('.onnx') && !model) model = path;
  }
  showFolder(currentFolder);
  if (model) openModel(model);
}

function upload(file, line) {
  return new Promise((resolve) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', withQuery('/api/upload', { dir: currentFolder, name: file.name }));
    xhr.setRequestHeader('X-Onnxstream-Token', token);
    xhr.upload.onprogress = (e) => { line.textContent = file.name + ': not in the folder, copying it in: ' + bytes(e.loaded) + ' of ' + bytes(e.total); };
    xhr.onload = () => {
      let body = {};
      try { body = JSON.parse(xhr.responseText); } catch (e) { body = { ok: false, error: { message: 'upload failed' } }; }
      if (body.ok) { line.textContent = file.name + ': copied to ' + body.path; resolve(body.path); }
      else { line.replaceChildren(errorBox(body.error)); resolve(''); }
    };
    xhr.onerror = () => { line.textContent = file.name + ': the upload failed'; resolve(''); };
    xhr.send(file);
  });
}

// ------------------------------------------------------------------ start

async function start() {
  const server = await api('/api/server');
  if (server.ok && server.network) {
    // Bound to an address other machines reach (gui --host): say so where it is seen.
    document.querySelector('header').append(el('p', { class: 'network-note', role: 'note' },
      'This page is reachable from the network: anyone with its URL can read and write the files in this folder.'));
  }
  const listed = await api('/api/actions');
  actions = Array.isArray(listed) ? listed : [];
  document.getElementById('open-form').addEventListener('submit', async (event) => {
    event.preventDefault();
    const path = document.getElementById('path-box').value.trim().replace(/^\/+/, '');
    if (path === '' || !path.endsWith('.onnx')) showFolder(path);
    else { showFolder(parentOf(path)); openModel(path); }
  });
  document.addEventListener('dragover', (e) => { e.preventDefault(); document.body.classList.add('dragging'); });
  document.addEventListener('dragleave', (e) => { if (!e.relatedTarget) document.body.classList.remove('dragging'); });
  document.addEventListener('drop', (e) => {
    e.preventDefault();
    document.body.classList.remove('dragging');
    if (e.dataTransfer && e.dataTransfer.files.length) dropped(Array.from(e.dataTransfer.files));
  });
  const deep = params.get('path') || '';
  await showFolder(deep.endsWith('.onnx') ? parentOf(deep) : deep);
  if (deep.endsWith('.onnx')) openModel(deep);
}

start();
