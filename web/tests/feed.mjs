// The open feed in a real headless Chromium against the `qp serve` that
// scripts/test-web started: how long a question takes from the ask's
// response to its cell on screen (the page waits on the server, not on a
// timer). Over ROUNDS questions asked one after another with `qp ask`, the
// moment its stdout (the id, printed once the server answered) arrives is
// compared with the moment the page's MutationObserver saw the cell. Goals:
// median <= 150 ms, max <= 500 ms (BENCHMARKS.md). Then the history: a
// question answered in the page, and the ones cancelled, are still there,
// with how they ended, after a reload and in a second browser profile
// paired afterwards.
//
// Environment: QP (the qp binary), QP_URL, QP_ROOM, LINK and LINK2 (pairing
// links of the agent's owner), the asker's QP_CONFIG_DIR.
import { spawn } from 'node:child_process';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';

const require = createRequire(`${process.env.NODE_PATH}/`);
const puppeteer = require('puppeteer-core');

const env = process.env;
const ROUNDS = 20;
const MEDIAN_MS = 150;
const MAX_MS = 500;

// Runs qp with `args`: resolves with stdout and the moment it first
// printed (the server's response has arrived by then).
function qp(args) {
  const child = spawn(env.QP, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let at = 0;
  let err = '';
  child.stdout.on('data', (d) => { if (!at) at = Date.now(); out += d; });
  child.stderr.on('data', (d) => { err += d; });
  return new Promise((resolve) => child.on('exit', (code) => resolve({ out: out.trim(), at, code, err })));
}

async function pair(context, link) {
  const page = await context.newPage();
  await page.goto(link, { waitUntil: 'load' });
  await page.waitForSelector('#link-accept[aria-disabled="false"]', { timeout: 10000 });
  await page.click('#link-accept');
  await page.waitForSelector('#feed-section:not([hidden])', { timeout: 10000 });
  return page;
}

// The resolution line of the cell with this prompt, once it has one.
async function resolutionOf(page, prompt) {
  const handle = await page.waitForFunction((p) => {
    for (const li of document.querySelectorAll('li.cell')) {
      if (li.querySelector('.prompt')?.textContent === p) return li.querySelector('.resolution')?.textContent || null;
    }
    return null;
  }, { timeout: 10000 }, prompt);
  return handle.jsonValue();
}

const browser = await puppeteer.launch({
  executablePath: env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run'],
});
try {
  const context = await browser.createBrowserContext();
  const page = await pair(context, env.LINK);
  // Each cell's prompt, with the moment it first appeared.
  await page.evaluate(() => {
    window.qpSeen = {};
    const note = () => {
      for (const p of document.querySelectorAll('li.cell .prompt')) {
        if (!(p.textContent in window.qpSeen)) window.qpSeen[p.textContent] = Date.now();
      }
    };
    new MutationObserver(note).observe(document.getElementById('feed'), { childList: true, subtree: true, characterData: true });
  });
  // The page has settled into its wait.
  await new Promise((r) => setTimeout(r, 500));
  const took = [];
  const ids = [];
  for (let i = 0; i < ROUNDS; i++) {
    const prompt = `Latency ${i + 1}?`;
    const asked = await qp(['ask', env.QP_ROOM, prompt]);
    assert.equal(asked.code, 0, `qp ask: ${asked.err}`);
    ids.push(asked.out);
    await page.waitForFunction((p) => p in window.qpSeen, { timeout: 10000 }, prompt);
    const seen = await page.evaluate((p) => window.qpSeen[p], prompt);
    took.push(Math.max(0, seen - asked.at));
  }
  const sorted = [...took].sort((x, y) => x - y);
  const median = (sorted[ROUNDS / 2 - 1] + sorted[ROUNDS / 2]) / 2;
  const max = sorted[ROUNDS - 1];
  console.log(`ask response -> cell visible over ${ROUNDS} questions: median ${median} ms, min ${sorted[0]} ms, max ${max} ms`);
  assert.ok(median <= MEDIAN_MS, `median ${median} ms > ${MEDIAN_MS} ms (${took.join(', ')})`);
  assert.ok(max <= MAX_MS, `max ${max} ms > ${MAX_MS} ms (${took.join(', ')})`);
  // Nothing of this test stays pending for the tests after it.
  for (const id of ids) {
    const r = await qp(['cancel', id]);
    assert.equal(r.code, 0, `qp cancel ${id}: ${r.err}`);
  }

  // --- the history survives a reload and reaches a new browser ------------
  const asked = qp(['ask', env.QP_ROOM, 'Kept after reload?', '--wait']);
  await page.waitForSelector('li.cell button.answer', { timeout: 10000 });
  const approve = await page.waitForFunction(() => {
    for (const li of document.querySelectorAll('li.cell')) {
      if (li.querySelector('.prompt')?.textContent === 'Kept after reload?') return li.querySelector('button.answer');
    }
    return null;
  }, { timeout: 10000 });
  await approve.asElement().click();
  const answeredAs = await asked;
  assert.equal(answeredAs.code, 0, `qp ask --wait: ${answeredAs.err}`);
  const answered = await resolutionOf(page, 'Kept after reload?');
  const cancelled = await resolutionOf(page, 'Latency 20?');
  await page.reload({ waitUntil: 'load' });
  assert.equal(await resolutionOf(page, 'Kept after reload?'), answered, 'after a reload');
  assert.equal(await resolutionOf(page, 'Latency 20?'), cancelled, 'after a reload');
  const second = await browser.createBrowserContext();
  const other = await pair(second, env.LINK2);
  assert.equal(await resolutionOf(other, 'Kept after reload?'), answered, 'in a second browser profile');
  assert.equal(await resolutionOf(other, 'Latency 20?'), cancelled, 'in a second browser profile');
  console.log(`history after a reload and in a second profile: "${answered}", "${cancelled}"`);
  await second.close();
  await context.close();
} finally {
  await browser.close();
}
console.log('feed.mjs: ok');
