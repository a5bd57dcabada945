// Drives the gui page in Debian's chromium (headless) for test_gui.py: opens models by
// deep link and by a simulated drop, runs actions, cancels one, and saves a screenshot per
// view. Usage: node drive.mjs BASE_URL TOKEN ARTIFACT_DIR RESULT_JSON
// The checks of what was written are made by test_gui.py with python-onnx and ONNX Runtime.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openBrowser } from './browser.mjs';

const [base, token, artifacts, resultFile] = process.argv.slice(2);
fs.mkdirSync(artifacts, { recursive: true });
const results = {};
const { browser, page, finish } = await openBrowser();

// As `onnxstream gui` prints it: the token in the fragment (never sent to a server).
const url = (query) => base + '/' + (query ? '?' + new URLSearchParams(query).toString() : '') + '#token=' + token;
const shot = (name, fullPage = false) => page.screenshot({ path: path.join(artifacts, name + '.png'), fullPage });
const texts = (selector) => page.$$eval(selector, (nodes) => nodes.map((n) => n.textContent.trim()));

async function openModel(rel) {
  await page.goto(url({ path: rel }), { waitUntil: 'networkidle0' });
  await page.waitForSelector('.data-files tbody tr');
  await page.waitForFunction(() => !document.querySelector('.analyze').textContent.includes('analyzing'));
}

// Runs an action with the form's defaults plus `fields`; returns the finished job's state and text.
async function runAction(title, fields = {}, onRunning = null) {
  const before = (await page.$$('.job')).length;
  await page.click(`.actions button[data-action="${title.toLowerCase()}"]`);
  await page.waitForSelector('.action-form:not([hidden])');
  for (const [name, value] of Object.entries(fields)) {
    const input = await page.$(`.action-form [name="${name}"]`);
    if (await input.evaluate((n) => n.tagName === 'SELECT')) await page.select(`.action-form select[name="${name}"]`, String(value));
    else if (value === true) await input.click();
    else { await input.click({ clickCount: 3 }); await input.type(String(value)); }
  }
  await page.click('.action-form button[type="submit"]');
  await page.waitForFunction((n) => document.querySelectorAll('.job').length > n, {}, before);
  if (onRunning) await onRunning();
  await page.waitForFunction(() => { const j = document.querySelector('.job'); return j.dataset.state || j.querySelector('.error'); },
    { timeout: 120000 });
  return page.$eval('.job', (j) => ({
    state: j.dataset.state || 'refused', text: j.textContent,
    outputs: Array.from(j.querySelectorAll('.outputs-list tr td:first-child')).map((td) => td.textContent),
    links: Array.from(j.querySelectorAll('.outputs-list a')).map((a) => a.href),
  }));
}

try {
  // The folder view.
  await page.goto(url(), { waitUntil: 'networkidle0' });
  await page.waitForSelector('#entries li');
  results.root_entries = await texts('#entries li .name');
  await shot('files');

  // A model with external data, by deep link.
  await openModel('resnet18/model.onnx');
  results.deep_link = {
    inputs: await texts('.inputs td'), data_rows: await texts('.data-files tbody tr'),
    status: await texts('.data-files td[class^="status"]'), merged: await texts('.merged'),
    analyze: await texts('.analyze'), summary: await texts('.model-summary'),
  };
  results.buttons = await texts('.actions button');
  await shot('model', true);

  // A data file found only by a guess (a common name): the page says so in words.
  await openModel('renamed/model.onnx');
  results.guessed = { data_rows: await texts('.data-files tbody tr') };

  // Names from a model are text, never markup.
  await openModel('hostile/model.onnx');
  results.hostile = { inputs: await texts('.inputs td'), summary: await texts('.model-summary'),
    pwned: await page.evaluate(() => window.pwned ?? null),
    injected: await page.evaluate(() => document.querySelectorAll('#model img, #model script, #model b').length) };
  await openModel('resnet18/model.onnx');

  // Keyboard: Tab reaches the action buttons, Enter opens the form.
  await page.focus('.actions button[data-action="merge"]');
  await page.keyboard.press('Enter');
  results.keyboard_form = await page.$eval('.action-form', (f) => !f.hidden && f.textContent.includes('Merge'));

  // Merge, Split, Optimize with the CLI's defaults.
  await openModel('resnet18/model.onnx');
  results.merge = await runAction('Merge');
  await shot('merge-done', true);
  results.split = await runAction('Split');
  results.optimize = await runAction('Optimize');
  await shot('optimize-done', true);
  // The forms come from the library's parameter table: labels in words with the flag in
  // small print, a select for a choice, defaults filled in.
  await page.click('.actions button[data-action="convert"]');
  await page.waitForSelector('.action-form:not([hidden])');
  results.convert_form = await page.$eval('.action-form', (f) => ({
    dtype: Array.from(f.querySelectorAll('select[name="dtype"] option')).map((o) => o.value),
    dtype_value: f.querySelector('select[name="dtype"]').value,
    labels: Array.from(f.querySelectorAll('label')).map((l) => l.textContent),
    align: f.querySelector('input[name="align"]').value,
    help: Array.from(f.querySelectorAll('.help')).map((h) => h.textContent),
  }));
  // The output field shows the name the output gets when left empty, as the server gives
  // it for the choices made (the command line's rule), and follows a change of choice.
  const defaultOutput = () => page.$eval('.action-form [name="output"]', (i) => ({
    placeholder: i.placeholder, value: i.value, note: i.parentNode.querySelector('.default-output')?.textContent ?? null }));
  await page.waitForFunction(() => document.querySelector('.action-form [name="output"]').dataset.defaultOutput);
  results.convert_output_fp16 = await defaultOutput();
  await page.select('.action-form select[name="dtype"]', 'bf16');
  await page.waitForFunction(() => document.querySelector('.action-form [name="output"]').dataset.defaultOutput.includes('bf16'));
  results.convert_output_bf16 = await defaultOutput();
  results.convert_bf16 = await runAction('Convert', { dtype: 'bf16' });
  // A field for another model offers the folder's models; the run button says why it is
  // disabled until a field the action needs is filled.
  await page.click('.actions button[data-action="diff"]');
  await page.waitForSelector('.action-form [name="other"]');
  await page.waitForFunction(() => document.querySelectorAll('.action-form datalist option').length > 0);
  const diffForm = () => page.$eval('.action-form', (f) => ({
    disabled: f.querySelector('button[type="submit"]').disabled, why: f.querySelector('.why-disabled').textContent,
    described: f.querySelector('button[type="submit"]').getAttribute('aria-describedby'),
    lists: Object.fromEntries(Array.from(f.querySelectorAll('input[list]')).map((i) =>
      [i.name, Array.from(document.getElementById(i.getAttribute('list')).options).map((o) => o.value)])),
  }));
  results.diff_empty = await diffForm();
  await page.type('.action-form [name="other"]', 'resnet18/model.onnx');
  results.diff_filled = await diffForm();
  await page.click('.actions button[data-action="split"]');
  await page.waitForSelector('.action-form:not([hidden])');
  results.split_form = await page.$eval('.action-form', (f) => ({
    threshold: f.querySelector('input[name="threshold"]').value,
    help: Array.from(f.querySelectorAll('.help')).map((h) => h.textContent),
  }));
  // The same merge again: the output exists, the page says what to do.
  results.merge_again = await runAction('Merge');
  await shot('error');

  // The token left the address bar, the URL holds no token, and no cookie was set.
  results.address = await page.evaluate(() => ({ href: location.href, cookie: document.cookie }));
  // A download link serves the bytes: a click fetches a one-use ticket and follows the link with it.
  const downloads = fs.mkdtempSync(path.join(os.tmpdir(), 'onnxstream-downloads-'));
  const cdp = await browser.target().createCDPSession();
  await cdp.send('Browser.setDownloadBehavior', { behavior: 'allow', downloadPath: downloads });
  await page.evaluate((file) => {
    for (const tr of document.querySelectorAll('.outputs-list tr')) if (tr.querySelector('td').textContent === file) return tr.querySelector('a').click();
    throw new Error('no download link for ' + file);
  }, results.merge.outputs[0]);
  const deadline = Date.now() + 60000;
  while (Date.now() < deadline && !fs.readdirSync(downloads).some((n) => !n.endsWith('.crdownload'))) {
    await new Promise((r) => setTimeout(r, 100));
  }
  results.downloaded = fs.readdirSync(downloads).map((n) => ({ name: n, size: fs.statSync(path.join(downloads, n)).size }));
  fs.rmSync(downloads, { recursive: true, force: true });
  // The first 100 bytes by Range, with a ticket as the page asks for one.
  results.range = await page.evaluate(async (file) => {
    const headers = { 'X-Onnxstream-Token': sessionStorage.getItem('onnxstream-token') };
    const issued = await (await fetch('/api/tickets?' + new URLSearchParams({ path: file }), { method: 'POST', headers })).json();
    const r = await fetch('/api/file?' + new URLSearchParams({ path: file, ticket: issued.ticket }), { headers: { Range: 'bytes=0-99' } });
    return { status: r.status, length: (await r.arrayBuffer()).byteLength, range: r.headers.get('Content-Range') };
  }, results.merge.outputs[0]);

  // A missing data file.
  await openModel('missing/model.onnx');
  results.missing = { status: await texts('.data-files td[class^="status"]'), problems: await texts('.data-files .problem'),
    merged: await texts('.merged') };
  await shot('missing', true);

  // A simulated drop: the model (found by name and size) and a file not in the folder (copied in).
  await page.goto(url(), { waitUntil: 'networkidle0' });
  const dropSize = Number(fs.statSync(process.env.GUI_DROP_MODEL).size);
  await page.evaluate((size) => {
    const transfer = new DataTransfer();
    transfer.items.add(new File([new Uint8Array(size)], 'model.onnx'));
    transfer.items.add(new File([new TextEncoder().encode('dropped bytes\n')], 'notes.txt'));
    document.dispatchEvent(new DragEvent('drop', { dataTransfer: transfer, bubbles: true, cancelable: true }));
  }, dropSize);
  await page.waitForSelector('.data-files tbody tr');
  await page.waitForFunction(() => document.getElementById('drop-status').textContent.includes('copied to'));
  results.drop = { path: await texts('.model-path'), inputs: await texts('.inputs td'), status: await texts('#drop-status div'),
    data_rows: await texts('.data-files tbody tr') };
  await shot('drop');

  // Diff of the large model with itself.
  await openModel('big/model.onnx');
  results.diff = await runAction('Diff', { other: 'big/model.onnx', threads: '1' });
  // A running job to look at: repack with checksums on one thread (about a second).
  await openModel('big/model.onnx');
  results.shown_running = await runAction('Repack', { output: 'big/shown.onnx', 'write-checksums': true, threads: '1' },
    async () => {
      await page.waitForFunction(() => { const j = document.querySelector('.job'); return j.dataset.state || / of /.test(j.textContent); },
        { polling: 'mutation', timeout: 60000 });
      await shot('progress');
    });

  // Cancel a long job on a large model.
  await openModel('big/model.onnx');
  results.cancel = await runAction('Repack', { 'write-checksums': true, threads: '1' }, async () => {
    // The first progress event (bytes of the total), then Cancel at once: the job takes about a second.
    await page.waitForFunction(() => document.querySelector('.job .detail').textContent.includes(' of '),
      { polling: 'mutation', timeout: 60000 });
    [results.cancel_clicked, results.cancel_progress] = await page.evaluate(() => {
      const b = document.querySelector('.job .line button');
      const seen = document.querySelector('.job .detail').textContent;
      if (!b || b.textContent !== 'Cancel') return [false, seen];
      b.click();
      return [true, seen];
    });
  });
  await shot('cancelled');

  // Phone width.
  await page.setViewport({ width: 390, height: 844, isMobile: true });
  await openModel('resnet18/model.onnx');
  results.phone_scroll_width = await page.evaluate(() => document.documentElement.scrollWidth);
  await shot('phone');
} catch (e) {
  results.failure = String(e.stack || e);
  await shot('failure').catch(() => {});
} finally {
  await finish(results, resultFile);
}
