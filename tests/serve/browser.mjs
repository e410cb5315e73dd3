// Headless Chromium for the page tests (chat_page.mjs, dashboard.mjs):
// Debian's chromium driven by tests/npm's playwright-core, and a page that
// records every error it raises and every request that failed.

import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const require = createRequire(new URL('../npm/package.json', import.meta.url));
const playwright = await import(pathToFileURL(require.resolve('playwright-core')).href);
const chromium = playwright.chromium ?? playwright.default.chromium;  // CommonJS

export async function launchBrowser() {
  return chromium.launch({
    executablePath: process.env.WARP_CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox'],  // root in containers and CI; the pages are our own
  });
}

// A page of `viewport` whose page errors, console errors and 4xx/5xx
// responses are pushed to `problems`.
export async function watchedPage(browser, viewport, problems) {
  const page = await browser.newPage({ viewport });
  page.setDefaultTimeout(20_000);
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  page.on('console', (m) => { if (m.type() === 'error') problems.push('console: ' + m.text()); });
  page.on('response', (r) => { if (r.status() >= 400) problems.push(`${r.status()} ${r.url()}`); });
  return page;
}
