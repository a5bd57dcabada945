// Drives the page's Graph and Tensors views in Debian's chromium (headless) for
// test_gui.py: a small model drawn whole, a real one (Silero), a 200k-node model opened
// grouped, search into a collapsed group, the details of a node, the tensor table sorted.
// Usage: node graph.mjs BASE_URL TOKEN ARTIFACT_DIR RESULT_JSON
import fs from 'node:fs';
import path from 'node:path';
import { openBrowser } from './browser.mjs';

const [base, token, artifacts, resultFile] = process.argv.slice(2);
fs.mkdirSync(artifacts, { recursive: true });
const results = {};
const { page, finish } = await openBrowser({ protocolTimeout: 600000 }, 240000);

const url = (query) => base + '/' + (query ? '?' + new URLSearchParams(query).toString() : '') + '#token=' + token;
const shot = (name) => page.screenshot({ path: path.join(artifacts, name + '.png') });

// Opens a model's Graph tab; returns what the drawing says of itself and the wall time.
async function openGraph(rel) {
  await page.goto(url({ path: rel }), { waitUntil: 'networkidle0' });
  await page.waitForSelector('.tabs [data-tab="graph"]');
  const started = Date.now();
  await page.click('.tabs [data-tab="graph"]');
  await page.waitForSelector('.graph-canvas svg .item');
  const wall = Date.now() - started;
  return page.$eval('.graph-canvas', (c) => ({
    nodes: Number(c.dataset.nodes), shown_nodes: Number(c.dataset.shownNodes), groups: Number(c.dataset.groups),
    draw_ms: Number(c.dataset.drawMs), fetch_ms: Number(c.dataset.fetchMs),
    node_boxes: c.querySelectorAll('.item.node').length, group_boxes: c.querySelectorAll('.item.group').length,
    badges: c.querySelectorAll('.badge').length, edge_labels: Array.from(c.querySelectorAll('.edge-label')).map((t) => t.textContent),
    status: document.querySelector('.graph-status').textContent,
  })).then((r) => Object.assign(r, { wall_ms: wall }));
}

async function find(query) {
  // The query is set at once (typing it key by key would time the browser's protocol).
  await page.$eval('.graph-search input', (i, q) => { i.value = q; }, query);
  // Cleared first: two searches may take the same number of milliseconds.
  await page.evaluate(() => { delete document.querySelector('.graph-canvas').dataset.searchMs; });
  await page.click('.graph-search button');
  await page.waitForFunction(() => document.querySelector('.graph-canvas').dataset.searchMs !== undefined &&
    document.querySelector('.graph-details h4'));
  return page.evaluate(() => ({
    search_ms: Number(document.querySelector('.graph-canvas').dataset.searchMs),
    selected: Array.from(document.querySelectorAll('.item.selected')).map((n) => Number(n.dataset.node)),
    title: document.querySelector('.graph-details h4').textContent,
    name: (document.querySelector('.graph-details .node-name') || {}).textContent,
    inputs: Array.from(document.querySelectorAll('.graph-details tr.input')).map((r) => Array.from(r.cells).map((c) => c.textContent)),
    outputs: Array.from(document.querySelectorAll('.graph-details tr.output')).map((r) => Array.from(r.cells).map((c) => c.textContent)),
    attributes: document.querySelector('.graph-details').textContent,
    status: document.querySelector('.graph-status').textContent,
    groups: document.querySelectorAll('.item.group').length,
  }));
}

// What the view shown says of itself: its depth, trail, nodes and input items.
const viewState = () => page.evaluate(() => {
  const c = document.querySelector('.graph-canvas');
  return {
    depth: Number(c.dataset.depth), nodes: Number(c.dataset.nodes), shown_nodes: Number(c.dataset.shownNodes),
    node_boxes: c.querySelectorAll('.item.node').length, groups: c.querySelectorAll('.item.group').length,
    crumbs: Array.from(document.querySelectorAll('.graph-crumbs > *')).map((n) => n.textContent),
    crumbs_hidden: document.querySelector('.graph-crumbs').hidden,
    inputs: Array.from(c.querySelectorAll('.item.input')).map((n) => ({ label: n.querySelector('.label').textContent,
      sub: n.querySelector('.sub').textContent, outer: n.classList.contains('outer') })),
    outputs: Array.from(c.querySelectorAll('.item.output .label')).map((n) => n.textContent),
    labels: Array.from(c.querySelectorAll('text')).map((n) => n.textContent),
    status: document.querySelector('.graph-status').textContent,
  };
});

// Opens the body or function the selected node's details offer whose button names `what`.
async function openBody(what) {
  const depth = await page.$eval('.graph-canvas', (c) => Number(c.dataset.depth));
  const buttons = await page.$$eval('.graph-details .open-graph', (b) => b.map((n) => n.textContent));
  const k = buttons.findIndex((t) => t.includes(what));
  if (k < 0) throw new Error('no button for ' + what + ' in ' + JSON.stringify(buttons));
  await page.evaluate((i) => document.querySelectorAll('.graph-details .open-graph')[i].click(), k);
  await page.waitForFunction((d) => Number(document.querySelector('.graph-canvas').dataset.depth) === d + 1, {}, depth);
  return Object.assign(await viewState(), { button: buttons[k] });
}

const tensorBytes = () => page.$$eval('.tensor-table tbody tr', (rows) => rows.map((r) => Number(r.cells[3].title.split(' ')[0])));
const tensorNames = () => page.$$eval('.tensor-table tbody tr', (rows) => rows.map((r) => r.cells[0].textContent));

try {
  // A small model (torchvision ResNet-18): every node drawn, shapes on the edges, weights as badges.
  results.small = await openGraph('graphs/resnet18/model.onnx');
  await shot('graph-small');
  results.small_find = await find('/layer1/layer1.0/conv1/Conv');
  results.small_find_weight = await find('fc.weight');
  await page.click('.tabs [data-tab="tensors"]');
  await page.waitForSelector('.tensor-table tbody tr');
  results.tensors_default = await tensorBytes();
  results.bars = await page.$$eval('.bar-row', (rows) => rows.map((r) => r.textContent));
  await page.click('.tensor-table th[data-key="name"]');
  results.tensors_by_name = await tensorNames();
  await page.click('.tensor-table th[data-key="bytes"]');
  results.tensors_by_bytes = await tensorBytes();
  await page.click('.tensor-table th[data-key="bytes"]');
  results.tensors_by_bytes_up = await tensorBytes();
  await page.type('.tensor-filter', 'layer4');
  results.tensors_filtered = await tensorNames();
  await shot('tensors');

  // A real model from the web (Silero VAD v5): its main graph, an If with two bodies.
  results.silero = await openGraph('graphs/silero_vad_v5.onnx');
  results.silero_find = await find('If');

  // Its bodies open as views of their own, each with a trail back (Silero's If_0 holds
  // 113 nodes in either branch, and Ifs of its own).
  results.silero_then = await openBody('then_branch');
  results.silero_find_inner = await find('If_0_then_branch__Inline_0__/decoder/If_1');
  results.silero_inner = await openBody('else_branch');
  // Its LSTM reads the weights of the graph around it: selected, it is brought into view.
  results.silero_lstm = await find('LSTM');
  await shot('graph-nested');
  await page.click('.graph-crumbs button[data-depth="0"]');
  await page.waitForFunction(() => document.querySelector('.graph-canvas').dataset.depth === '0');
  results.silero_back = await viewState();

  // A Paddle export (PP-OCRv4 det, paddle2onnx): 672 nodes, unscoped names, weights as Constants.
  results.ppocr = await openGraph('graphs/ch_PP-OCRv4_det_infer.onnx');
  results.ppocr_find = await find('p2o.Conv.5');

  // 200 000 nodes in 2000 scopes: drawn grouped at once, search opens the group of the match.
  results.huge = await openGraph('graphs/huge/model.onnx');
  await shot('graph-200k');
  const t = Date.now();
  results.huge_find = await find('/model/block.1234/Relu_57');
  results.huge_find.ms = Date.now() - t;
  await shot('graph-search');
  // Keyboard: a closed group is a button; Enter opens it.
  await page.$eval('.item.group[data-group]', (g) => g.focus());
  const opened = await page.$eval('.item.group[data-group]', (g) => g.querySelector('.label').textContent);
  await page.keyboard.press('Enter');
  await page.waitForFunction((n) => document.querySelectorAll('.item.group').length < n, {}, results.huge_find.groups);
  results.huge_keyboard = { opened, groups: await page.$$eval('.item.group', (g) => g.length) };
  results.huge_after = await page.$eval('.graph-canvas', (c) => ({ shown_nodes: Number(c.dataset.shownNodes), draw_ms: Number(c.dataset.drawMs) }));

  // A made model: an If reading outer values, a body with a hostile name in it, calls of a
  // local function (from a body and from the main graph).
  results.nested = await openGraph('nested/model.onnx');
  results.nested_find = await find('branch');
  results.nested_then = await openBody('then_branch');
  results.nested_then_hostile = { pwned: await page.evaluate(() => window.pwned ?? null),
    injected: await page.evaluate(() => document.querySelectorAll('#model img, #model script, #model b').length) };
  results.nested_then_find = await find('then_neg');
  await page.click('.graph-crumbs button[data-depth="0"]');
  await page.waitForFunction(() => document.querySelector('.graph-canvas').dataset.depth === '0');
  results.nested_find_again = await find('branch');
  results.nested_else = await openBody('else_branch');
  results.nested_call = await find('else_call');
  results.nested_function = await openBody('function');
  await page.click('.graph-crumbs button[data-depth="0"]');
  await page.waitForFunction(() => document.querySelector('.graph-canvas').dataset.depth === '0');
  results.nested_main_call = await find('main_call');
  results.nested_main_function = await openBody('function');

  // Names from a model are text in the drawing, the details and the table, never markup.
  await openGraph('hostile/model.onnx');
  results.hostile_find = await find('<img');
  await page.click('.tabs [data-tab="tensors"]');
  results.hostile = { pwned: await page.evaluate(() => window.pwned ?? null),
    injected: await page.evaluate(() => document.querySelectorAll('#model img, #model script, #model b').length),
    labels: await page.$$eval('.graph-canvas text', (t) => t.map((n) => n.textContent)) };
} catch (e) {
  results.failure = String(e.stack || e);
  await shot('graph-failure').catch(() => {});
} finally {
  await finish(results, resultFile);
}
