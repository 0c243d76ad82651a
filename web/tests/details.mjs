// The small things a person meets, in a real headless Chromium against the
// `qp serve` that scripts/test-web started: the reply field counts as the
// protocol counts (five emoji fit a five-character limit; the field says
// what is left; a reply over it is refused in the web's own words), focus
// stays in the cell after answering by keyboard, two options sit side by
// side at 360 px, the German header's two buttons do too, and turning
// notifications on says why it could not (blocked; the push service out of
// reach, a stand-in rejection as Chromium gives: nothing leaves loopback;
// a server without Web Push, said without asking for a permission).
//
// Environment: QP (the qp binary), QP_URL, QP_ROOM, LINK, LINK_DE, LINK_NB,
// LINK_NU, LINK_OFF (pairing links of the agent's owner), the asker's
// QP_CONFIG_DIR.
import { spawn } from 'node:child_process';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';

const require = createRequire(`${process.env.NODE_PATH}/`);
const puppeteer = require('puppeteer-core');

const env = process.env;
const FIVE = '😀🎉👍🚀🌍';

function ask(args) {
  const child = spawn(env.QP, ['ask', env.QP_ROOM, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { err += d; });
  return new Promise((resolve) => child.on('exit', (code) => resolve({ out: out.trim(), code, err })));
}

async function open(browser, link, { languages = ['en'], width = 360, before = null } = {}) {
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  if (before) await before(page);
  await page.setViewport({ width, height: 800 });
  await page.evaluateOnNewDocument((langs) => {
    Object.defineProperty(navigator, 'languages', { get: () => langs });
    Object.defineProperty(navigator, 'language', { get: () => langs[0] });
  }, languages);
  await page.goto(link, { waitUntil: 'load' });
  await page.waitForSelector('#link-accept[aria-disabled="false"]', { timeout: 10000 });
  await page.click('#link-accept');
  await page.waitForSelector('#feed-section:not([hidden])', { timeout: 10000 });
  return { context, page };
}

async function cellWith(page, prompt) {
  const h = await page.waitForFunction((p) => [...document.querySelectorAll('li.cell')]
    .find((li) => li.querySelector('.prompt')?.textContent === p) || null, { timeout: 15000 }, prompt);
  return h.asElement();
}

// `sel` in the cell of `prompt` (looked up afresh: a redraw replaces cells).
const inCell = (page, prompt, sel) => page.evaluateHandle((p, q) => [...document.querySelectorAll('li.cell')]
  .find((li) => li.querySelector('.prompt')?.textContent === p)?.querySelector(q) || null, prompt, sel);
const textIn = async (page, prompt, sel) => (await inCell(page, prompt, sel)).evaluate((e) => e && e.textContent);

const sameRow = (page, a, b) => page.evaluate((x, y) => {
  const r1 = x.getBoundingClientRect();
  const r2 = y.getBoundingClientRect();
  return { same: Math.abs(r1.top - r2.top) < 1, a: [r1.left, r1.top, r1.width], b: [r2.left, r2.top, r2.width] };
}, a, b);

const browser = await puppeteer.launch({
  executablePath: env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run'],
});
try {
  const { page } = await open(browser, env.LINK);

  // --- the reply field counts characters, as the protocol does -------------
  const mood = 'Mood in five?';
  const asked = ask([mood, '--text', 'five characters', '--text-max', '5', '--wait']);
  await cellWith(page, mood);
  const left = () => textIn(page, mood, '.reply .left');
  const input = () => inCell(page, mood, '.reply input');
  assert.equal(await left(), 'Characters left: \u20685\u2069');
  await (await input()).focus();
  await page.keyboard.type(`${FIVE}✨`);
  assert.equal(await left(), 'Characters over the limit: \u20681\u2069');
  assert.equal(await (await input()).evaluate((i) => i.getAttribute('aria-invalid')), 'true');
  await page.keyboard.press('Enter');
  const refusal = await page.waitForFunction((p) => [...document.querySelectorAll('li.cell')]
    .find((li) => li.querySelector('.prompt')?.textContent === p)?.querySelector('.status')?.textContent || null, { timeout: 5000 }, mood);
  const said = await refusal.jsonValue();
  assert.match(said, /Shorten it, then send it again\.$/, said);
  assert.doesNotMatch(said, /Open the app/);
  console.log(`over the limit: "${said}"`);
  await (await input()).focus();
  await page.keyboard.press('End');
  await page.keyboard.press('Backspace');
  assert.equal(await (await input()).evaluate((i) => i.value), FIVE, 'the field took all five emoji');
  assert.equal(await left(), 'Characters left: \u20680\u2069');
  await page.keyboard.press('Enter');
  const answered = await asked;
  assert.equal(answered.code, 0, answered.err);
  assert.equal(answered.out, FIVE);
  // Focus stays in the answered question's cell, not on the page's body.
  await page.waitForFunction((p) => [...document.querySelectorAll('li.cell')]
    .some((li) => li.querySelector('.prompt')?.textContent === p && li.querySelector('.resolution')), { timeout: 5000 }, mood);
  const focused = await page.evaluate(() => [document.activeElement.tagName, document.activeElement.id]);
  assert.match(focused[1], /^cell-/, `focus after a typed answer: ${focused}`);
  console.log('five emoji at a five-character limit: typed, counted, sent; focus kept in the cell');

  // --- two options inline at 360 px; focus after answering by keyboard ------
  const go = 'Ship it now?';
  const asked2 = ask([go, '--wait']);
  const cell2 = await cellWith(page, go);
  const [yes, no] = await cell2.$$('.buttons button.answer');
  const row = await sameRow(page, yes, no);
  assert.ok(row.same, `two options stacked at 360 px: ${JSON.stringify(row)}`);
  await page.screenshot({ path: `${env.SHOTS || '/tmp'}/two-options-360.png` });
  await yes.focus();
  await page.keyboard.press('Enter');
  assert.equal((await asked2).code, 0);
  await page.waitForFunction((p) => [...document.querySelectorAll('li.cell')]
    .some((li) => li.querySelector('.prompt')?.textContent === p && li.querySelector('.resolution')), { timeout: 5000 }, go);
  const after = await page.evaluate(() => document.activeElement.id);
  assert.match(after, /^cell-/, `focus after answering by keyboard: "${after}"`);
  console.log('two options side by side at 360 px; focus kept after a keyboard answer');

  // --- the German header at 360 px --------------------------------------------
  const de = await open(browser, env.LINK_DE, { languages: ['de'] });
  await de.page.waitForSelector('#notify:not([hidden])');
  const header = await sameRow(de.page, await de.page.$('#notify'), await de.page.$('#sign-out'));
  assert.ok(header.same, `the German header's buttons stacked: ${JSON.stringify(header)}`);
  assert.ok(await de.page.evaluate(() => document.documentElement.scrollWidth <= 360), 'wider than 360 px');
  await de.page.screenshot({ path: `${env.SHOTS || '/tmp'}/header-de-360.png` });
  console.log('the German header: both buttons on one row at 360 px');

  // --- why notifications could not be turned on ------------------------------
  const blocked = await open(browser, env.LINK_NB);
  const cdp = await browser.target().createCDPSession();
  await cdp.send('Browser.setPermission', {
    permission: { name: 'notifications' }, setting: 'denied', origin: env.QP_URL, browserContextId: blocked.context.id,
  });
  await blocked.page.waitForSelector('#notify:not([hidden])');
  await blocked.page.click('#notify');
  const why = await blocked.page.waitForFunction(() => document.getElementById('notify-status').textContent || null, { timeout: 5000 });
  assert.equal(await why.jsonValue(), 'Notifications are blocked for this site. Allow them in your browser’s site settings, then try again.');
  assert.equal(await blocked.page.$eval('#notify', (b) => b.textContent), 'Turn on notifications');

  const unreachable = await open(browser, env.LINK_NU);
  await unreachable.context.overridePermissions(env.QP_URL, ['notifications']);
  // Chromium's answer when its push service cannot be reached (here none
  // may be: nothing leaves loopback).
  await unreachable.page.evaluate(() => {
    PushManager.prototype.subscribe = async () => {
      throw new DOMException('Registration failed - push service error', 'AbortError');
    };
  });
  await unreachable.page.waitForSelector('#notify:not([hidden])');
  await unreachable.page.click('#notify');
  const why2 = await unreachable.page.waitForFunction(() => document.getElementById('notify-status').textContent || null, { timeout: 5000 });
  assert.equal(await why2.jsonValue(), 'Notifications are not on: the browser’s push service could not be reached. Check the connection, then try again.');
  console.log('notifications: blocked and unreachable each say why');

  // --- a server without Web Push: said at once, no permission asked ---------
  // The key endpoint answers as a server without Web Push does (PostgreSQL
  // without --vapid-key: cli/tests/web_push.rs checks that 404); this
  // server has a key, so the answer is given here, in the server's shape.
  const off = await open(browser, env.LINK_OFF, { before: async (page) => {
    // The page's own requests, not the service worker's, are intercepted.
    await page.setBypassServiceWorker(true);
    await page.setRequestInterception(true);
    page.on('request', (req) => {
      if (new URL(req.url()).pathname === '/api/webpush/key') {
        req.respond({
          status: 404,
          contentType: 'application/json',
          body: JSON.stringify({ error: { code: 'not_found', message: 'Web Push is not configured (--vapid-key)' } }),
        });
      } else req.continue();
    });
    await page.evaluateOnNewDocument(() => {
      window.qpAsked = 0;
      const ask = Notification.requestPermission.bind(Notification);
      Notification.requestPermission = (...a) => { window.qpAsked++; return ask(...a); };
    });
  } });
  const why3 = await off.page.waitForFunction(() => document.getElementById('notify-status').textContent || null, { timeout: 5000 });
  assert.equal(await why3.jsonValue(), 'This server does not send notifications. Questions appear here while this page is open.');
  assert.ok(await off.page.$eval('#notify', (b) => b.hidden), 'a button to turn on what the server cannot send');
  assert.equal(await off.page.evaluate(() => window.qpAsked), 0, 'the browser was asked for a permission');
  console.log('a server without Web Push: the page says so, and asks the browser nothing');
} finally {
  await browser.close();
}
console.log('details.mjs: ok');
process.exit(0);
