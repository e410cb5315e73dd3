// computed serve's chat page (/) in headless Chromium (Debian's, driven by
// tests/npm's playwright-core), for tests/serve/chat_page_test.cc. Does what a
// person does: types, presses Enter, watches the reply stream in, clicks Stop.
//
//   node chat_page.mjs reply URL MESSAGE TEMPERATURE [SCREENSHOT.png]
//     sends MESSAGE (twice: a second turn continues the conversation) and
//     prints each reply's text, stats line and how many times the text grew;
//   node chat_page.mjs stop URL MESSAGE TEMPERATURE
//     sends MESSAGE, clicks Stop once the reply has shown and grown, and
//     prints the text when stopped and a second later.
// Prints one JSON object; anything else (a page error, a timeout) exits 1.

import { launchBrowser, watchedPage } from './browser.mjs';

const [mode, url, message, temperature, screenshot] = process.argv.slice(2);
if (!['reply', 'stop'].includes(mode) || !url || !message || temperature === undefined) {
  console.error('usage: chat_page.mjs reply|stop URL MESSAGE TEMPERATURE [SCREENSHOT.png]');
  process.exit(2);
}

const browser = await launchBrowser();
const problems = [];
try {
  const page = await watchedPage(browser, { width: 900, height: 640 }, problems);
  await page.goto(url + '/');
  // The model's name, fetched from /v1/models, shows the page's API works.
  await page.waitForFunction(() => document.getElementById('model').textContent !== '');
  const model = await page.textContent('#model');
  await page.fill('#temperature', temperature);

  // Records every change of each reply's text (a streamed reply grows many
  // times; a reply set once grows once).
  await page.evaluate(() => {
    window.growth = [];
    new MutationObserver(() => {
      const replies = document.querySelectorAll('.assistant .content');
      replies.forEach((c, i) => {
        const seen = window.growth[i] ??= [];
        if (seen[seen.length - 1] !== c.textContent.length) seen.push(c.textContent.length);
      });
    }).observe(document.getElementById('log'), { subtree: true, childList: true, characterData: true });
  });

  async function send(text) {
    await page.fill('#input', text);
    await page.press('#input', 'Enter');
  }
  const replies = () => page.$$eval('.msg.assistant', (all) => all.map((r) => ({
    content: r.querySelector('.content').textContent,
    reasoning: r.querySelector('.reasoning').textContent,
    stats: r.querySelector('.stats').textContent,
    error: r.classList.contains('error'),
  })));

  let result;
  if (mode === 'reply') {
    for (let turn = 1; turn <= 2; ++turn) {
      await send(message);
      // The reply is done when its stats line is there and Send is back.
      await page.waitForFunction((n) => {
        const all = document.querySelectorAll('.msg.assistant .stats');
        return all.length === n && all[n - 1].textContent !== '' &&
               !document.getElementById('send').disabled;
      }, turn);
    }
    if (screenshot) await page.screenshot({ path: screenshot, fullPage: true });
    result = {
      model,
      users: await page.$$eval('.msg.user', (all) => all.map((u) => u.textContent)),
      replies: await replies(),
      growth: await page.evaluate(() => window.growth),
      input: await page.inputValue('#input'),
    };
  } else {
    await send(message);
    // Streamed: the text shows, then grows while the request is still open.
    await page.evaluate(() => {
      window.shown = () => {
        const c = document.querySelector('.msg.assistant .content');
        return c ? c.textContent.length : 0;
      };
    });
    await page.waitForFunction(() => window.shown() > 0);
    const first = await page.evaluate(() => window.shown());
    await page.waitForFunction((n) => window.shown() > n, first);
    const stopEnabled = await page.isEnabled('#stop');
    await page.click('#stop');
    await page.waitForFunction(() => !document.getElementById('send').disabled);
    const atStop = (await replies())[0];
    await page.waitForTimeout(1000);
    result = {
      growth_before_stop: (await page.evaluate(() => window.growth))[0],
      stop_was_enabled: stopEnabled,
      stop_enabled_after: await page.isEnabled('#stop'),
      at_stop: atStop,
      after: (await replies())[0],
    };
  }
  result.problems = problems;
  console.log(JSON.stringify(result));
} catch (e) {
  console.error('chat_page.mjs: ' + (e.stack || e) + '\n' + problems.join('\n'));
  process.exitCode = 1;
} finally {
  await browser.close();
}
