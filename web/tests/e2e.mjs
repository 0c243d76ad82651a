// The web responder end to end in a real headless Chromium (Debian's
// `chromium`, driven by puppeteer-core over the DevTools protocol), against
// a real `qp serve` on loopback that scripts/test-web started:
// pair by link (the link names its account and waits for a click), see a
// pending question appear, answer by button, by the
// sheet and by typed reply, see the asker's `qp ask --wait` return it; a
// second browser context (another device of the same person) shows the
// resolution; sign out revokes the token. Then screenshots (light, dark,
// Arabic, 360 px wide) and axe-core's accessibility check. A link for
// another account asks first, naming both, and ends this browser's push
// subscription rather than moving it.
//
// Environment: QP (the qp binary), QP_URL, QP_ROOM, LINK_A, LINK_B, LINK_C,
// LINK_DARK, LINK_AR, LINK_SW (pairing links of one user, Federica),
// LINK_OTHER (a pairing link of another user, Mallory), SHOTS (a
// directory), AXE (axe.min.js), and the asker's QP_CONFIG_DIR.
import { spawn } from 'node:child_process';
import { readFileSync, mkdirSync } from 'node:fs';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';

// puppeteer-core lives where scripts/test-web installed it (NODE_PATH), not
// beside the sources; ES modules ignore NODE_PATH, so it is required from there.
const require = createRequire(`${process.env.NODE_PATH}/`);
const puppeteer = require('puppeteer-core');

const env = process.env;
const CHROMIUM = env.CHROMIUM || '/usr/bin/chromium';
const shots = env.SHOTS;
mkdirSync(shots, { recursive: true });
const started = Date.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const POLLS = 4600; // more than two of the page's polls (every 2 s)
const log = (...a) => console.log(`[${((Date.now() - started) / 1000).toFixed(1)}s]`, ...a);

// `qp ask … --wait` as an asker runs it: resolves with its stdout and exit code.
function ask(args) {
  const child = spawn(env.QP, ['ask', env.QP_ROOM, ...args, '--wait'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { err += d; });
  return new Promise((resolve) => child.on('exit', (code) => resolve({ out: out.trim(), err, code })));
}

// The cell of a question; fails at once with the asker's error if `asked`
// (its `qp ask`) ends first.
async function cellFor(page, prompt, asked) {
  return Promise.race([
    cellWith(page, prompt),
    asked.then((r) => { throw new Error(`qp ask ended first (${r.code}): ${r.out} ${r.err}`); }),
  ]);
}

async function cellWith(page, prompt, timeout = 30000) {
  await page.bringToFront();
  const handle = await page.waitForFunction((p) => {
    for (const li of document.querySelectorAll('li.cell')) {
      if (li.querySelector('.prompt')?.textContent === p) return li;
    }
    return null;
  }, { timeout }, prompt);
  return handle.asElement();
}

async function textOf(el, sel) {
  return el.$eval(sel, (e) => e.textContent).catch(() => null);
}

async function waitResolution(page, prompt, expected, timeout = 30000) {
  await page.bringToFront();
  try {
    await page.waitForFunction((p, want) => {
      for (const li of document.querySelectorAll('li.cell')) {
        if (li.querySelector('.prompt')?.textContent === p) return li.querySelector('.resolution')?.textContent === want;
      }
      return false;
    }, { timeout }, prompt, expected);
  } catch (e) {
    const shown = await page.evaluate(() => [...document.querySelectorAll('li.cell')].map((li) => li.innerText).join(' | '));
    const status = await page.evaluate(() => document.getElementById('net-status').textContent);
    throw new Error(`no "${expected}" for "${prompt}"; the feed shows: ${shown}; status: ${status}`);
  }
}

async function newPage(browser, { languages, dark, width } = {}) {
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  await page.setViewport({ width: width || 420, height: 860 });
  if (languages) {
    await page.evaluateOnNewDocument((langs) => {
      Object.defineProperty(navigator, 'languages', { get: () => langs });
      Object.defineProperty(navigator, 'language', { get: () => langs[0] });
    }, languages);
  }
  if (dark) await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'dark' }]);
  const problems = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
  page.on('pageerror', (e) => problems.push(String(e)));
  page.on('requestfailed', (r) => {
    // Chromium reports a bodiless response aborted once it has been read:
    // sign-out's 204 (the token is checked revoked below) and the kept
    // history's 304 revalidation. The feed's wait is aborted when the page
    // ends it to read again at once (AbortController). Any other failure
    // is a problem.
    const why = r.failure()?.errorText;
    const path = new URL(r.url()).pathname;
    const status = r.response() ? r.response().status() : 0;
    const bodiless = status === 204 || status === 304;
    const aborted = why === 'net::ERR_ABORTED'
      && (bodiless || path === '/api/me/token' || path === '/api/questions/pending/wait');
    if (!aborted) problems.push(`failed: ${r.url()} ${why}`);
  });
  page.on('request', (r) => {
    if (!r.url().startsWith(env.QP_URL)) problems.push(`third-party request: ${r.url()}`);
  });
  return { context, page, problems };
}

// Opens a pairing link: the page names the account and waits; nothing is
// redeemed until the click.
async function openLink(page, link) {
  await page.goto(link, { waitUntil: 'load' });
  await page.waitForSelector('body[data-ready="1"]');
  await page.waitForSelector('#link-accept:not([hidden])', { timeout: 10000 });
  // The code is gone from the address bar before anything else.
  assert.equal(new URL(page.url()).hash, '');
}

async function pairByLink(page, link) {
  await openLink(page, link);
  await page.waitForSelector('#link-accept[aria-disabled="false"]', { timeout: 5000 });
  await page.click('#link-accept');
  await page.waitForSelector('#feed-section:not([hidden])', { timeout: 10000 });
  // The code is gone from the address bar; the token sits in IndexedDB.
  assert.equal(new URL(page.url()).hash, '');
  assert.equal(new URL(page.url()).pathname, '/app/');
  const session = await page.evaluate(() => qpStore.session());
  assert.ok(session.token && session.user.id, 'a session in IndexedDB');
  return session;
}

async function axeCheck(page, name) {
  // Evaluated over DevTools, not injected as a script: the page's CSP
  // (rightly) refuses inline script.
  await page.evaluate(readFileSync(env.AXE, 'utf8'));
  const result = await page.evaluate(() => axe.run(document, { resultTypes: ['violations'] }));
  const bad = result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(bad.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target).join(', ')})`), [], `axe on ${name}`);
  return result.violations.length;
}

const browser = await puppeteer.launch({
  executablePath: CHROMIUM,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run'],
});
try {
  // --- pair two devices of one person --------------------------------------
  const a = await newPage(browser, { languages: ['en-US', 'en'] });
  const sessionA = await pairByLink(a.page, env.LINK_A);
  log('A paired as', sessionA.user.id);
  const b = await newPage(browser, { languages: ['en-GB'] });
  await pairByLink(b.page, env.LINK_B);
  log('B paired');
  // A used pairing link is refused: the code was redeemed once.
  const again = await newPage(browser);
  await again.page.goto(env.LINK_A, { waitUntil: 'load' });
  await again.page.waitForFunction(() => document.getElementById('pair-status').textContent.length > 0);
  // Said as the phone says it (qp-core's pairing failure), by reason.
  assert.equal(await again.page.$eval('#pair-status', (e) => e.textContent), 'That code is unknown, already used or expired. Ask for a new invite.');
  await again.context.close();

  // --- a pending question appears; answered by button ------------------------
  const prompt1 = 'Deploy <b>v1.4.0</b> to production?';
  const asked1 = ask([prompt1, '--context', 'Build #4821', '--yes-no']);
  const cell1 = await cellFor(a.page, prompt1, asked1);
  log('question 1 shown');
  assert.equal(await textOf(cell1, '.title'), 'Release Bot asks you');
  // The asker's text as text: no <b> element was made from it.
  assert.equal(await cell1.$('.prompt b'), null);
  assert.equal(await textOf(cell1, '.context'), 'Build #4821');
  assert.match(await textOf(cell1, '.time'), /^(59|60) min left$/);
  const labels = await cell1.$$eval('.buttons button', (bs) => bs.map((x) => [x.textContent, x.className]));
  assert.deepEqual(labels.map((l) => l[0]), ['Approve', 'Deny']);
  assert.match(labels[0][1], /style-primary/);
  assert.match(labels[1][1], /style-danger/);
  await a.page.waitForFunction(() => document.getElementById('announce').textContent.includes('Deploy'));
  await cellWith(b.page, prompt1);
  await a.page.screenshot({ path: `${shots}/feed-light.png` });
  // A focused button keeps focus across the polls (the feed is not rebuilt
  // when nothing changed, and a rebuild refocuses by the control's id).
  await a.page.bringToFront();
  const denyId = await cell1.$eval('.buttons button.style-danger', (x) => { x.focus(); return x.id; });
  assert.ok(denyId, 'the button has a stable id');
  await sleep(POLLS);
  assert.equal(await a.page.evaluate(() => document.activeElement && document.activeElement.id), denyId, 'focus kept across polls');
  log('a focused button kept its focus across polls');
  const approve = await (await cellWith(a.page, prompt1)).$('.buttons button.style-primary');
  await approve.click();
  const r1 = await asked1;
  assert.equal(r1.out, 'approve', r1.err);
  assert.equal(r1.code, 0);
  await waitResolution(a.page, prompt1, 'You answered: Approve');
  // The other device of the same person shows the resolution too.
  await waitResolution(b.page, prompt1, 'You answered: Approve');
  log('answered by button; B shows the resolution');

  // --- four options: the sheet with the time remaining -----------------------
  const prompt2 = 'Which environment?';
  const asked2 = ask([prompt2, '--option', 'dev', '--option', 'staging', '--option', 'prod:Production:danger', '--option', 'dr', '--ttl', '7200']);
  const cell2 = await cellFor(a.page, prompt2, asked2);
  // The other device has it too before it is answered (a question answered
  // before a device ever saw it pending is not in that device's feed).
  await cellWith(b.page, prompt2);
  await a.page.bringToFront();
  assert.equal(await textOf(cell2, 'button.choose'), 'Choose an answer (4 options)');
  await (await cell2.$('button.choose')).click();
  await a.page.waitForSelector('#sheet[open]');
  assert.equal(await a.page.$eval('#sheet-time', (e) => e.textContent), '1 h left');
  const sheet = await a.page.$$eval('#sheet-options button', (bs) => bs.map((x) => x.textContent));
  assert.deepEqual(sheet, ['dev', 'staging', 'Production', 'dr']);
  // Closing the sheet returns focus to the button that opened it.
  await a.page.keyboard.press('Escape');
  await a.page.waitForFunction(() => !document.getElementById('sheet').open);
  await sleep(POLLS);
  assert.match(await a.page.evaluate(() => document.activeElement.id), /^choose-/);
  assert.equal(await a.page.evaluate(() => document.activeElement.textContent), 'Choose an answer (4 options)');
  await a.page.keyboard.press('Enter');
  await a.page.waitForSelector('#sheet[open]');
  await a.page.screenshot({ path: `${shots}/sheet-light.png` });
  await axeCheck(a.page, 'the sheet');
  await a.page.click('#sheet-options button.style-danger');
  const r2 = await asked2;
  assert.equal(r2.out, 'prod', r2.err);
  await waitResolution(b.page, prompt2, 'You answered: Production');
  log('answered from the sheet');

  // --- a typed reply (and the check before sending) --------------------------
  const prompt3 = 'Why is the build red?';
  const asked3 = ask([prompt3, '--text', 'a short reason', '--text-max', '20']);
  const cell3 = await cellFor(a.page, prompt3, asked3);
  await cellWith(b.page, prompt3);
  await a.page.bringToFront();
  assert.equal(await cell3.$('.buttons'), null);
  assert.equal(await cell3.$eval('input', (i) => i.placeholder), 'a short reason');
  assert.equal(await textOf(cell3, 'button.send'), 'Send');
  await a.page.screenshot({ path: `${shots}/text-light.png` });
  await cell3.$eval('form', (f) => f.requestSubmit());
  const refusal = await a.page.waitForFunction(() => [...document.querySelectorAll('.status')].map((s) => s.textContent).find((x) => x));
  assert.equal(await refusal.jsonValue(), 'Type a reply first.');
  const input = await (await cellWith(a.page, prompt3)).$('input');
  await input.type('flaky');
  // Typing: the field keeps focus and the draft across the polls.
  const inputId = await input.evaluate((i) => i.id);
  await sleep(POLLS);
  assert.deepEqual(await a.page.evaluate(() => [document.activeElement.id, document.activeElement.value]), [inputId, 'flaky']);
  await a.page.keyboard.type(' test');
  await (await cellWith(a.page, prompt3)).$eval('form', (f) => f.requestSubmit());
  const r3 = await asked3;
  assert.equal(r3.out, 'flaky test', r3.err);
  await waitResolution(b.page, prompt3, 'You answered: “flaky test”');
  log('answered by typed reply');

  // --- pending cells for the pictures and the accessibility check -----------
  const pics = [
    ask(['Ship the hotfix to all regions?', '--context', 'PR #512', '--yes-no', '--ttl', '1800']),
    ask(['Rotate the staging database password?', '--option', 'now:Rotate now:primary', '--option', 'later:Tomorrow', '--text', 'or say why not', '--scope', 'room']),
  ];
  await cellWith(a.page, 'Rotate the staging database password?');
  await a.page.screenshot({ path: `${shots}/feed-light.png` });
  const violations = await axeCheck(a.page, 'the feed, light');

  const dark = await newPage(browser, { languages: ['en'], dark: true });
  await openLink(dark.page, env.LINK_DARK);
  await dark.page.screenshot({ path: `${shots}/link-dark.png` });
  await axeCheck(dark.page, 'a pairing link, dark');
  await dark.page.waitForSelector('#link-accept[aria-disabled="false"]', { timeout: 5000 });
  await dark.page.click('#link-accept');
  await cellWith(dark.page, 'Rotate the staging database password?');
  await dark.page.screenshot({ path: `${shots}/feed-dark.png` });
  await axeCheck(dark.page, 'the feed, dark');

  // Navigation to the first question shown, under 4x CPU slowdown (a
  // mid-range phone), in a new tab of the paired dark context: fetch the
  // page, compile the WebAssembly, read the session, fetch, draw.
  const times = [];
  for (let i = 0; i < 3; i++) {
    const p = await dark.context.newPage();
    const c = await p.createCDPSession();
    await c.send('Emulation.setCPUThrottlingRate', { rate: 4 });
    await c.send('Network.enable');
    await c.send('Network.setCacheDisabled', { cacheDisabled: true });
    const t0 = Date.now();
    await p.goto(`${env.QP_URL}/app/`);
    await p.waitForSelector('li.cell .prompt');
    times.push(Date.now() - t0);
    await p.close();
  }
  times.sort((x, y) => x - y);
  console.log(`BENCH first question shown (4x CPU slowdown, no cache): median ${times[1]} ms (${times.join(', ')})`);

  // Opened at a question (a notification's ./?q=ID): its cell is focused
  // and in view, and ?q= leaves the address bar.
  const hotfixId = await (await cellWith(dark.page, 'Ship the hotfix to all regions?')).evaluate((li) => li.dataset.question);
  {
    const p = await dark.context.newPage();
    await p.setViewport({ width: 420, height: 480 });
    await p.goto(`${env.QP_URL}/app/?q=${encodeURIComponent(hotfixId)}`, { waitUntil: 'load' });
    await p.waitForFunction((id) => document.activeElement && document.activeElement.id === `cell-${id}`, { timeout: 10000 }, hotfixId);
    assert.equal(new URL(p.url()).search, '');
    const inView = await p.evaluate((id) => {
      const r = document.getElementById(`cell-${id}`).getBoundingClientRect();
      return r.bottom > 0 && r.top < innerHeight;
    }, hotfixId);
    assert.ok(inView, 'the opened question is in view');
    await p.close();
  }
  log('opened at a question by ?q=');

  const ar = await newPage(browser, { languages: ['ar'], width: 360 });
  await openLink(ar.page, env.LINK_AR);
  assert.ok((await ar.page.$eval('#link-heading', (e) => e.textContent)).includes('\u2068Federica\u2069'));
  await ar.page.waitForSelector('#link-accept[aria-disabled="false"]', { timeout: 5000 });
  await ar.page.click('#link-accept');
  const arCell = await cellWith(ar.page, 'Rotate the staging database password?');
  assert.equal(await ar.page.evaluate(() => document.documentElement.dir), 'rtl');
  assert.equal(await ar.page.evaluate(() => document.documentElement.lang), 'ar');
  assert.notEqual(await textOf(arCell, '.title'), 'Release Bot asks the room');
  assert.ok((await textOf(arCell, '.title')).includes('Release Bot'));
  // 360 px: nothing wider than the screen.
  assert.ok(await ar.page.evaluate(() => document.documentElement.scrollWidth <= 360));
  await ar.page.screenshot({ path: `${shots}/feed-arabic-360.png`, fullPage: true });
  await axeCheck(ar.page, 'the feed, Arabic, 360 px');
  log('screenshots and axe done', violations, 'minor violations');

  // --- pairing again replaces the session and revokes the old token ----------
  const statusOf = async (token) => (await fetch(`${env.QP_URL}/api/me`, { headers: { Authorization: `Bearer ${token}` } })).status;
  const oldB = await b.page.evaluate(() => qpStore.session());
  assert.equal(await statusOf(oldB.token), 200);
  await openLink(b.page, env.LINK_C);
  assert.equal(await b.page.$eval('#link-replace', (e) => e.textContent),
    'This browser is already signed in as \u2068Federica\u2069. Continuing replaces that sign-in.');
  const newB = await pairByLink(b.page, env.LINK_C);
  assert.notEqual(newB.token, oldB.token);
  assert.equal(await statusOf(oldB.token), 401, 'the replaced token is revoked');
  assert.equal(await statusOf(newB.token), 200);
  log('re-paired: the old token revoked');

  // --- a link for another account ---------------------------------------------
  // Opening it changes nothing: the page names the account of the link and
  // the one signed in, and waits. Cancelled, the code stays unspent; taken,
  // the old token is revoked and this browser's push subscription is ended
  // before the new account signs in, never registered for it.
  {
    const sw = await newPage(browser, { languages: ['en'] });
    await sw.context.overridePermissions(env.QP_URL, ['notifications']);
    const vapid = (await (await fetch(`${env.QP_URL}/api/webpush/key`)).json()).public_key;
    // The browser's push service cannot be reached here: a stand-in
    // subscription, remembered across loads (localStorage) as a real one is.
    await sw.page.evaluateOnNewDocument((key) => {
      const b64 = key.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (key.length % 4)) % 4);
      const fake = {
        endpoint: 'https://push.stand-in.invalid/qp-test',
        options: { applicationServerKey: Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)).buffer },
        toJSON() { return { endpoint: this.endpoint, keys: { p256dh: 'stand-in', auth: 'stand-in' } }; },
        async unsubscribe() { localStorage.setItem('qp-test-push', 'ended'); return true; },
      };
      PushManager.prototype.getSubscription = async () => (localStorage.getItem('qp-test-push') === 'on' ? fake : null);
      PushManager.prototype.subscribe = async () => { localStorage.setItem('qp-test-push', 'on'); return fake; };
    }, vapid);
    // Registrations are answered here: the server never holds a
    // subscription it would push to (nothing leaves loopback).
    const registered = [];
    await sw.page.setRequestInterception(true);
    sw.page.on('request', (r) => {
      if (r.isInterceptResolutionHandled()) return;
      if (r.method() === 'POST' && r.url() === `${env.QP_URL}/api/devices`) {
        registered.push({ token: r.headers().authorization.replace(/^Bearer /, ''), body: JSON.parse(r.postData()) });
        r.respond({ status: 201, contentType: 'application/json', body: JSON.stringify({ id: 'dev_stand_in', platform: 'web', app_id: env.QP_URL }) });
      } else {
        r.continue();
      }
    });
    const fed = await pairByLink(sw.page, env.LINK_SW);
    await sw.page.click('#notify');
    await sw.page.waitForFunction(() => document.getElementById('notify').textContent === 'Notifications are on');
    assert.deepEqual(registered.map((x) => x.token), [fed.token]);
    assert.equal(JSON.parse(registered[0].body.push_token).endpoint, 'https://push.stand-in.invalid/qp-test');

    // Opened: named, both accounts, nothing done yet.
    await openLink(sw.page, env.LINK_OTHER);
    const linkText = async (id) => sw.page.$eval(`#${id}`, (e) => e.textContent);
    assert.equal(await linkText('link-heading'), 'Sign in as \u2068Mallory\u2069?');
    assert.equal(await linkText('link-detail'), `This pairing link signs this browser in to \u2068${new URL(env.QP_URL).host}\u2069 as \u2068Mallory\u2069. Continue only if \u2068Mallory\u2069 is you.`);
    assert.equal(await linkText('link-replace'), 'This browser is signed in as \u2068Federica\u2069. Continuing signs \u2068Federica\u2069 out of this browser and turns off notifications here.');
    assert.equal(await linkText('link-accept'), 'Sign in as \u2068Mallory\u2069');
    assert.equal(await linkText('link-cancel'), 'Stay signed in as \u2068Federica\u2069');
    assert.equal(await sw.page.evaluate(() => document.activeElement.id), 'link-heading', 'read first, not one Enter from pairing');
    await sw.page.screenshot({ path: `${shots}/link-switch.png` });
    await axeCheck(sw.page, 'a link for another account');
    assert.equal((await sw.page.evaluate(() => qpStore.session())).token, fed.token, 'still signed in as before');
    assert.equal(await statusOf(fed.token), 200);

    // Cancelled: back to the feed as before; the code was not spent.
    await sw.page.click('#link-cancel');
    await sw.page.waitForSelector('#feed-section:not([hidden])');
    assert.equal(await sw.page.$eval('#user-name', (e) => e.textContent), 'Federica');
    const code = new URL(env.LINK_OTHER).hash.slice(1);
    const peek = await fetch(`${env.QP_URL}/api/pair/preview`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ code }) });
    assert.equal(peek.status, 200, 'the code is still good');

    // A click the moment the page appears (a double click on the sender's
    // page) does nothing; a click once it is armed pairs: Mallory, the old
    // token revoked, the subscription ended, not moved.
    await openLink(sw.page, env.LINK_OTHER);
    await sw.page.click('#link-accept');
    await sleep(300);
    assert.equal((await sw.page.evaluate(() => qpStore.session())).token, fed.token, 'an early click paired nothing');
    await sw.page.waitForSelector('#link-accept[aria-disabled="false"]', { timeout: 5000 });
    await sw.page.click('#link-accept');
    await sw.page.waitForFunction(() => document.getElementById('user-name').textContent === 'Mallory');
    const mallory = await sw.page.evaluate(() => qpStore.session());
    assert.equal(mallory.user.display_name, 'Mallory');
    assert.equal(await statusOf(fed.token), 401, 'the replaced token is revoked');
    assert.equal(await sw.page.evaluate(() => localStorage.getItem('qp-test-push')), 'ended');
    await sw.page.waitForFunction(() => document.getElementById('notify').textContent === 'Turn on notifications');
    assert.equal(await linkText('feed-note'), 'Notifications were turned off when this browser changed accounts. Turn them on again for \u2068Mallory\u2069 if you want them.');
    await sleep(500);
    assert.ok(registered.length >= 1 && registered.every((x) => x.token === fed.token),
      `the subscription was registered only for Federica, never for Mallory (${mallory.token.slice(0, 8)}…)`);
    assert.deepEqual(sw.problems, [], 'no errors, no third-party requests');
    await sw.context.close();
    log('a link for another account: asked first, named both; the subscription ended, not moved');
  }

  // --- sign out revokes the token --------------------------------------------
  await b.page.click('#sign-out');
  await b.page.waitForSelector('#pair:not([hidden])');
  assert.equal(await b.page.evaluate(() => qpStore.session()), undefined);
  const sessionB = sessionA; // same person, A's token still works
  const status = async (token) => (await fetch(`${env.QP_URL}/api/me`, { headers: { Authorization: `Bearer ${token}` } })).status;
  assert.equal(await status(sessionB.token), 200);
  await a.page.click('#sign-out');
  await a.page.waitForSelector('#pair:not([hidden])');
  assert.equal(await status(sessionA.token), 401, 'the signed-out token is revoked');
  log('signed out: token revoked');

  for (const c of [a, b, dark, ar]) assert.deepEqual(c.problems, [], 'no errors, no third-party requests');
  // The picture questions are left pending; their askers stop with the server.
  void pics;
  console.log(`web e2e: ok in ${((Date.now() - started) / 1000).toFixed(1)} s`);
} finally {
  await browser.close();
}
process.exit(0);
