// computed serve's /dashboard in headless Chromium (Debian's, driven by
// tests/npm's playwright-core), for tests/serve/chat_page_test.cc: loads the
// page, lets it poll /metrics twice, and prints the figures it shows, the
// legends of its charts, every URL it fetched and any error it raised.
//
//   node dashboard.mjs URL
// Prints one JSON object; a page that never shows its figures exits 1.

import { launchBrowser, watchedPage } from './browser.mjs';

const [url] = process.argv.slice(2);
if (!url) {
  console.error('usage: dashboard.mjs URL');
  process.exit(2);
}
const browser = await launchBrowser();
const problems = [];
const fetched = [];
try {
  const page = await watchedPage(browser, { width: 1200, height: 800 }, problems);
  page.on('request', (r) => fetched.push(r.url()));
  await page.goto(url + '/dashboard');
  await page.fill('#every', '0.5');
  // Two polls: the figures, and a first point on every chart (its legend).
  await page.waitForFunction(() => document.getElementById('tps-legend').textContent !== '');
  const figures = await page.$$eval('#figures td.v', (cells) =>
    Object.fromEntries(cells.map((c) => [c.id, Number(c.textContent)])));
  const legends = await page.$$eval('.legend', (all) =>
    Object.fromEntries(all.map((l) => [l.id, l.textContent])));
  console.log(JSON.stringify({ figures, legends, fetched: [...new Set(fetched)], problems }));
} catch (e) {
  console.error('dashboard.mjs: ' + e.message + (problems.length ? '\n' + problems.join('\n') : ''));
  process.exitCode = 1;
} finally {
  await browser.close();
}
