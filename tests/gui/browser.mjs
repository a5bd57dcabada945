// The headless chromium (Debian's, through puppeteer-core) that drive.mjs and graph.mjs run
// the page in: a fresh profile, one 1280x800 page whose script errors are collected, and the
// end every run has (the results written with those errors, the browser and profile gone).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import puppeteer from 'puppeteer-core';

// `launch`: puppeteer launch options beside the shared ones (e.g. protocolTimeout);
// `defaultTimeout`: the page's, in ms, set before anything else is done with it.
export async function openBrowser(launch = {}, defaultTimeout = undefined) {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'onnxstream-chromium-'));
  const browser = await puppeteer.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    userDataDir: profile,
    ...launch,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
      '--disable-sync', '--no-first-run', '--disable-dev-shm-usage'],
  });
  const page = await browser.newPage();
  if (defaultTimeout !== undefined) page.setDefaultTimeout(defaultTimeout);
  const consoleErrors = [];
  page.on('pageerror', (e) => consoleErrors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
  await page.setViewport({ width: 1280, height: 800 });

  // Writes `results` (with the console errors) to `resultFile`, then closes the browser and removes its profile.
  async function finish(results, resultFile) {
    results.console_errors = consoleErrors;
    fs.writeFileSync(resultFile, JSON.stringify(results, null, 2));
    await browser.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
  return { browser, page, finish };
}
