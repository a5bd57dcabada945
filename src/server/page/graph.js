// The onnxstream page's views of a model's graph: the Graph tab (a layered drawing, name
// scopes as groups, search, details) and the Tensors tab (the initializer table, bytes by
// scope and dtype), over /api/graph (ops/graph_view.hpp says what it holds). If / Loop /
// Scan bodies and local functions open as views of their own, with a trail back. Loaded before
// app.js, whose helpers (el, api, bytes, errorBox) and currentModel it uses. Every string
// from a model goes through textContent, never innerHTML.
'use strict';

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

// The view of one graph of the document: the main graph (doc itself), or a body or local
// function, whose view reads the document's tables with its own nodes, inputs and outputs.
function prepareGraph(doc, weightOf) {
  const nodes = doc.nodes;
  const values = doc.values;
  const producer = new Int32Array(values.length).fill(-1);
  const firstUse = new Int32Array(values.length).fill(-1);
  nodes.forEach((n, i) => {
    for (const v of n[4]) if (v >= 0) producer[v] = i;
    for (const v of n[3]) if (v >= 0 && firstUse[v] < 0) firstUse[v] = i;
  });
  if (!weightOf) {
    weightOf = new Map();  // value -> initializer row
    for (const t of doc.initializers) if (t[1] >= 0) weightOf.set(t[1], t);
  }
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
  return { doc, nodes, values, producer, firstUse, weightOf, groups, groupOf, expanded, selected: null, view: null, search: null,
    outer: null, title: 'main graph', depth: 0 };
}

// What a body or function view is called in the trail: "If 'name' › then_branch".
function graphTitle(doc, k) {
  const sub = doc.subgraphs[k];
  if (sub.kind === 'function') return 'function ' + (sub.domain ? sub.domain + '.' : '') + sub.name;
  const nodes = sub.parent < 0 ? doc.nodes : doc.subgraphs[sub.parent].nodes;
  const n = nodes[sub.node];
  return doc.ops[n[1]] + (n[0] ? " '" + n[0] + "'" : '') + ' › ' + sub.attribute;
}

// Nodes of graph k and of the bodies inside it.
function graphNodeCount(doc, k) {
  const sub = doc.subgraphs[k];
  let count = sub.nodes.length;
  for (const n of sub.nodes) for (const b of n[5]) if (doc.subgraphs[b].kind === 'body') count += graphNodeCount(doc, b);
  return count;
}

// Opens graph k of the document as the view above `from`; outer values it reads are
// drawn as its inputs (the weights among them as badges, as weights are everywhere).
function openGraphView(from, k) {
  const M = from.main;
  const sub = M.doc.subgraphs[k];
  const outer = sub.outer.filter((v) => !M.weightOf.has(v));
  const doc = Object.assign({}, M.doc, { nodes: sub.nodes, inputs: sub.inputs.concat(outer), outputs: sub.outputs,
    nodes_total: graphNodeCount(M.doc, k) });
  const V = prepareGraph(doc, M.weightOf);
  Object.assign(V, { main: M, panel: M.panel, outer: new Set(outer), title: graphTitle(M.doc, k), graph: k, depth: from.depth + 1,
    view: { scale: 1, tx: 0, ty: 0 } });
  M.stack.length = from.depth + 1;
  M.stack.push(V);
  drawGraph(V);
  fitView(V);
  M.panel.querySelector('.graph-details').replaceChildren(el('p', { class: 'detail' }, 'Click a node or a group.'));
}

// Back to view `depth` of the trail (0: the main graph), as it was left.
function backToView(M, depth) {
  M.stack.length = depth + 1;
  const V = M.stack[depth];
  drawGraph(V);
  if (V.selected && V.selected.node !== undefined) showNodeDetails(V, V.selected.node);
  else M.panel.querySelector('.graph-details').replaceChildren(el('p', { class: 'detail' }, 'Click a node or a group.'));
}

function currentView(M) { return M.stack[M.stack.length - 1]; }

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
    const outer = G.outer !== null && G.outer.has(v);
    if (v < 0 || (G.values[v][1] !== 'input' && !outer) || inputItem.has(v)) continue;
    inputItem.set(v, items.length);
    items.push({ kind: 'input', outer, value: v, first: -1, label: G.values[v][0],
      sub: (outer ? 'outer · ' : '') + G.values[v][2] + shapeText(G.values[v][3]) });
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
  // A node that reads nothing drawn (a Constant; in a body, a node that reads only weights)
  // goes just above its first reader, not into the top row, which it would widen.
  for (let r = order.length - 1; r >= 0; r--) {
    const k = order[r];
    if (incoming[k].length || !outgoing[k].length || (items[k].kind !== 'node' && items[k].kind !== 'group')) continue;
    layer[k] = Math.max(0, Math.min(...outgoing[k].map((o) => layer[o])) - 1);
  }
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

function showGraph(panel, M) {
  if (M.error) { panel.replaceChildren(errorBox(M.error)); return; }
  if (!M.bound) {
    M.bound = true;
    M.panel = panel;
    M.main = M;
    M.stack = [M];
    panel.querySelector('.graph-fit').addEventListener('click', () => fitView(currentView(M)));
    panel.querySelector('.graph-collapse').addEventListener('click', () => {
      const G = currentView(M);
      G.expanded = new Set([0]);
      if (G.groups.length === 1 || G.groups[0].kids.length + G.groups[0].nodes.length === 1)
        for (const k of G.groups[0].kids) G.expanded.add(k.id);
      drawGraph(G);
      fitView(G);
    });
    panel.querySelector('.graph-search').addEventListener('submit', (event) => {
      event.preventDefault();
      searchGraph(currentView(M), event.target.elements.q.value.trim());
    });
    setupPanZoom(M, panel.querySelector('.graph-canvas'));
    drawGraph(M);
    fitView(M);
  }
}

// The trail from the main graph to the view shown; each step but the last goes back.
function drawCrumbs(G) {
  const nav = G.panel.querySelector('.graph-crumbs');
  if (!nav) return;
  const stack = G.main ? G.main.stack : [G];
  nav.hidden = stack.length < 2;
  const parts = [];
  stack.forEach((V, depth) => {
    if (depth > 0) parts.push(' / ');
    if (depth === stack.length - 1) parts.push(el('span', { class: 'here', 'aria-current': 'location' }, V.title));
    else parts.push(el('button', { type: 'button', class: 'link', 'data-depth': String(depth) , onclick: () => backToView(G.main, depth) }, V.title));
  });
  nav.replaceChildren(...parts);
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
    const g = svg('g', { class: 'item ' + it.kind + (it.outer ? ' outer' : ''), transform: `translate(${it.x - it.w / 2},${it.y - it.h / 2})`, 'data-item': k });
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
    if (it.kind === 'node' || it.kind === 'group') {
      // Reachable by Tab, opened or selected by Enter as by a click.
      g.setAttribute('tabindex', '0');
      g.setAttribute('role', 'button');
      g.setAttribute('aria-label', (it.kind === 'group' ? 'open group ' : 'node ') + it.label + ' ' + it.sub);
      g.addEventListener('keydown', (event) => {
        if (event.key === 'Enter' || event.key === ' ') { event.preventDefault(); g.dispatchEvent(new MouseEvent('click')); }
      });
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
  canvas.dataset.fetchMs = String((G.main || G).fetchMs);
  canvas.dataset.depth = String(G.depth);
  drawCrumbs(G);
  G.panel.querySelector('.graph-status').textContent = (G.depth ? G.title + ': ' : '') + G.nodes.length + ' nodes (' + G.doc.nodes_total +
    ' with subgraphs); showing ' + shownNodes + ' nodes and ' + shownGroups + ' collapsed groups; drawn in ' + ms + ' ms';
  if (G.selected && G.selected.group !== undefined) showGroupDetails(G, G.groups[G.selected.group]);
}

function setupPanZoom(M, canvas) {
  M.view = { scale: 1, tx: 0, ty: 0 };
  let drag = null;
  canvas.addEventListener('wheel', (event) => {
    const G = currentView(M);
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
    const G = currentView(M);
    drag = { x: event.clientX, y: event.clientY, tx: G.view.tx, ty: G.view.ty };
  });
  window.addEventListener('pointermove', (event) => {
    if (!drag) return;
    const G = currentView(M);
    G.view.tx = drag.tx + event.clientX - drag.x;
    G.view.ty = drag.ty + event.clientY - drag.y;
    applyView(G);
  });
  window.addEventListener('pointerup', () => { drag = null; });
  canvas.addEventListener('keydown', (event) => {
    const G = currentView(M);
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
  const bodies = n[5].filter((k) => G.doc.subgraphs[k].kind === 'body');
  if (bodies.length) parts.push(el('p', {}, bodies.length + ' subgraph' + (bodies.length > 1 ? 's' : '') + ' (If / Loop / Scan bodies)'));
  for (const k of n[5]) {
    const sub = G.doc.subgraphs[k];
    const what = sub.kind === 'function' ? 'open function ' + (sub.domain ? sub.domain + '.' : '') + sub.name : 'open body (' + sub.attribute + ')';
    parts.push(el('button', { type: 'button', class: 'open-graph', 'data-graph': String(k), onclick: () => openGraphView(G, k) },
      what + ', ' + graphNodeCount(G.doc, k) + ' nodes'));
  }
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

