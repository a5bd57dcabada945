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

// ------------------------------------------------------------------ actions and jobs

// The files of the model's folder, offered in a form's file fields (models only for a
// field that takes a model); fetched once per form.
async function fillFileLists(path, lists) {
  if (!lists.length) return;
  const folder = parentOf(path);
  const body = await api('/api/list', { path: folder });
  if (!body.ok) return;
  for (const [list, f] of lists) {
    for (const e of body.entries) {
      if (e.folder || e.outside || (f.kind === 'model' && !e.name.endsWith('.onnx'))) continue;
      list.append(el('option', { value: folder ? folder + '/' + e.name : e.name }));
    }
  }
}

function showForm(form, a, path, jobs) {
  form.hidden = false;
  form.replaceChildren(el('p', { class: 'summary' }, a.title + ': ' + a.summary));
  const lists = [];
  let output = null;
  let outputNote = null;
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
      if (f.name === 'output') output = input;
      else if (f.kind === 'path' || f.kind === 'model') {
        const list = el('datalist', { id: id + '-files', class: 'file-list' });
        input.setAttribute('list', list.id);
        lists.push([list, f]);
        form.append(list);
      }
      form.append(label, input);
    }
    const help = el('span', { class: 'help' }, f.help + (f.default && f.kind !== 'flag' ? ' (default ' + f.default + ')' : ''));
    if (f.name === 'output') { outputNote = el('span', { class: 'default-output' }); help.append(' ', outputNote); }
    form.append(help);
  }
  fillFileLists(path, lists);
  // The name the output gets when its field is left empty, as the server (the command
  // line's rule) gives it for the choices made.
  const showOutput = async () => {
    if (!output) return;
    const query = { path, action: a.name };
    for (const f of a.fields) if (f.kind === 'choice') query[f.name] = form.elements[f.name].value;
    const r = await api('/api/output', query);
    if (!r.ok || !r.output) return;
    output.placeholder = r.output;
    output.dataset.defaultOutput = r.output;
    outputNote.textContent = '(left empty: ' + r.output + ')';
  };
  for (const select of form.querySelectorAll('select')) select.addEventListener('change', showOutput);
  showOutput();
  const run = el('button', { type: 'submit', class: 'primary' }, a.title);
  const why = el('span', { class: 'why-disabled', id: 'why-' + a.name, role: 'status' });
  form.append(el('div', { class: 'buttons' }, run, ' ', why));
  // Disabled, with the reason beside it, while a field the action needs is empty.
  const needed = a.fields.filter((f) => f.required && f.kind !== 'flag');
  const checkNeeded = () => {
    const missing = needed.filter((f) => !form.elements[f.name].value.trim());
    run.disabled = missing.length > 0;
    if (missing.length) run.setAttribute('aria-describedby', why.id);
    else run.removeAttribute('aria-describedby');
    why.textContent = missing.length ? 'fill in ' + missing.map((f) => f.label || f.name).join(', ') + ' first' : '';
  };
  form.oninput = checkNeeded;  // the form is reused: one handler, this action's
  checkNeeded();
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
