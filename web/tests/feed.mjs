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
// Then two tabs of one browser: a 401 in one (its token revoked when the
// other signed in as someone else) leaves the other's sign-in, kept feed
// and push subscription alone.
//
// Environment: QP (the qp binary), QP_URL, QP_ROOM, LINK, LINK2 and LINK3
// (pairing links of the agent's owner), LINK_OTHER (of another member of
// the room), the asker's QP_CONFIG_DIR.
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

  // --- a failed history read does not stop the feed ------------------------
  // Every read of the history fails (500) from the reload on: the page's
  // wait still runs, and a question asked then still appears.
  await page.evaluateOnNewDocument(() => {
    const real = window.fetch;
    window.fetch = (url, init) => (String(url).includes('/api/questions/history')
      ? Promise.resolve(new Response('{}', { status: 500 }))
      : real(url, init));
  });
  await page.reload({ waitUntil: 'load' });
  await page.waitForSelector('#feed-section:not([hidden])', { timeout: 10000 });
  const despite = await qp(['ask', env.QP_ROOM, 'Shown though the history failed?']);
  assert.equal(despite.code, 0, `qp ask: ${despite.err}`);
  await page.waitForFunction(() => [...document.querySelectorAll('li.cell .prompt')]
    .some((p) => p.textContent === 'Shown though the history failed?'), { timeout: 10000 });
  assert.equal((await qp(['cancel', despite.out])).code, 0);
  console.log('a failed history read: the feed went on to its wait');
  await context.close();

  // --- two tabs of one browser: a sign-in in one is not undone by the other
  // Tab one is signed in as the agent's owner; tab two (same profile, same
  // IndexedDB) signs in as Mallory, which revokes the owner's token. Tab
  // one then meets a 401: it must not clear Mallory's sign-in, nor end the
  // browser's push subscription (now Mallory's), and it never writes the
  // owner's feed beside Mallory's session.
  const shared = await browser.createBrowserContext();
  const one = await pair(shared, env.LINK3);
  await resolutionOf(one, 'Kept after reload?');
  const owner = await one.evaluate(() => session.user.id);
  await one.evaluate(() => {
    window.qpUnsubscribed = 0;
    const real = self.qpWebPush.unsubscribe.bind(self.qpWebPush);
    self.qpWebPush.unsubscribe = () => { window.qpUnsubscribed++; return real(); };
  });
  const two = await pair(shared, env.LINK_OTHER);
  const mallory = await two.evaluate(() => session.user);
  assert.notEqual(mallory.id, owner);
  // Tab one still holds the owner's session in memory: its feed, saved now
  // (as a wait returning late would), is not written for Mallory's session.
  const wrote = await one.evaluate(() => qpStore.saveFeed(session, [...questions.values()]));
  assert.equal(wrote, false, "tab one wrote the owner's feed after Mallory signed in");
  // A push that came for Mallory is not drawn in tab one, which still
  // shows the owner.
  const drawnStale = await one.evaluate(async (id) => {
    await pushed({ id: 'q-pushed-for-mallory', prompt: 'For Mallory?', state: 'pending' }, id).catch(() => {});
    return questions.has('q-pushed-for-mallory');
  }, mallory.id);
  assert.equal(drawnStale, false, "tab one drew a push for Mallory under the owner's account");
  // An answer made in tab one now (as offline, then back) is neither queued
  // nor sent: Mallory's flush would send it with her token.
  const stale = await one.evaluate(async () => {
    const out = await qpSubmit(session, { question_id: 'q-stale-tab', body: '{}', key: qpNewKey() });
    return { out, queued: (await qpStore.queued()).map((e) => e.question_id) };
  });
  assert.deepEqual(stale, { out: { error: 401 }, queued: [] }, "tab one queued an answer under Mallory's session");
  // One of the owner's answers left in the outbox (queued offline before the
  // switch) is never sent by Mallory's tab: kept aside, no request made.
  const aside = await two.evaluate(async (ownerId) => {
    await qpTx('outbox', 'readwrite', (s) => s.put({ question_id: 'q-owner-offline', body: '{}', key: qpNewKey(), user_id: ownerId }));
    let sent = 0;
    const real = window.fetch;
    window.fetch = (url, init) => { if (String(url).includes('/answer')) sent++; return real(url, init); };
    try { await qpFlush(session); } finally { window.fetch = real; }
    const left = (await qpStore.queued()).map((e) => e.question_id);
    await qpStore.unqueue('q-owner-offline');
    return { sent, left };
  }, owner);
  assert.deepEqual(aside, { sent: 0, left: ['q-owner-offline'] }, "Mallory's tab sent the owner's queued answer");
  // Its next read meets the revoked token's 401. (Tab one is in the
  // background now: no animation frames, so the waits below poll.)
  await one.evaluate(() => window.dispatchEvent(new Event('online')));
  await one.waitForFunction((name) => document.getElementById('user-name').textContent === name
    && !document.getElementById('feed-section').hidden, { timeout: 10000, polling: 200 }, mallory.display_name)
    .catch(async (e) => {
      const state = await one.evaluate(() => ({
        user: document.getElementById('user-name').textContent,
        feed: !document.getElementById('feed-section').hidden,
        pair: !document.getElementById('pair').hidden,
        net: document.getElementById('net-status').textContent,
        session: session && session.user.display_name,
      }));
      throw new Error(`tab one after the 401: ${JSON.stringify(state)}: ${e.message}`);
    });
  const stored = await two.evaluate(async () => {
    const s = await qpStore.session();
    return { user: s && s.user.id, feed: await qpStore.feed(s), keys: await qpTx('session', 'readonly', (st) => st.getAllKeys()) };
  });
  assert.equal(stored.user, mallory.id, "the 401 in tab one cleared tab two's sign-in");
  assert.ok(!stored.keys.includes(`feed:${owner}`) && !stored.keys.includes(`history:${owner}`),
    `the owner's feed is kept beside Mallory's session: ${stored.keys}`);
  assert.equal(await one.evaluate(() => window.qpUnsubscribed), 0, "tab one ended Mallory's push subscription");
  await two.reload({ waitUntil: 'load' });
  await two.waitForFunction((name) => document.getElementById('user-name').textContent === name, { timeout: 10000, polling: 200 }, mallory.display_name);
  console.log(`two tabs: a 401 in one left the other's sign-in (${mallory.display_name}) and its subscription alone; tab one followed it`);
  await shared.close();
} finally {
  await browser.close();
}
console.log('feed.mjs: ok');
