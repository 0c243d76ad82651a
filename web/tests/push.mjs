// The web responder's service worker in a real headless Chromium, fed by
// Web Push: cli/tests/web_push.rs (in_chromium) runs this against a real
// server and the stand-in push service, which decrypted each push with the
// subscription's keys. Chromium's own push service is not reachable here,
// so each decrypted message is handed to the worker over DevTools
// (ServiceWorker.deliverPushMessage), as its push service would have.
//
// Checks: the notification shown (title, body, actions, tag); a button
// pressed in the worker (notificationclick) answers without opening the app
// and the notification is replaced by the resolution; a resolution made
// elsewhere replaces it too, and is shown when no notification is showing;
// an unreadable push shows "open the app"; an answer made offline is kept, shown as
// queued, and sent once when the connection returns.
//
// Environment: QP_URL, PUSH_URL (the stand-in), USER_TOKEN, USER_ID,
// AGENT_TOKEN, ROOM.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';

// puppeteer-core lives where scripts/test-web installed it (NODE_PATH), not
// beside the sources; ES modules ignore NODE_PATH, so it is required from there.
const require = createRequire(`${process.env.NODE_PATH}/`);
const puppeteer = require('puppeteer-core');

const env = process.env;
const started = Date.now();
const log = (...a) => console.log(`[${((Date.now() - started) / 1000).toFixed(1)}s]`, ...a);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function until(what, fn, timeout = 10000) {
  const end = Date.now() + timeout;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await sleep(50);
  }
}

async function call(method, path, token, body) {
  const r = await fetch(`${env.QP_URL}${path}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: r.status, body: await r.json().catch(() => null) };
}

const ask = async (body) => (await call('POST', `/api/agent/rooms/${env.ROOM}/questions`, env.AGENT_TOKEN, body)).body;
const question = async (id) => (await call('GET', `/api/questions/${id}`, env.USER_TOKEN)).body;
let seen = 0;
async function nextPush() {
  return until('a push at the stand-in', async () => {
    const { messages } = await (await fetch(`${env.PUSH_URL}/messages`)).json();
    if (messages.length > seen) return messages[seen++].data;
    return null;
  });
}

const browser = await puppeteer.launch({
  executablePath: env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run'],
});
try {
  const origin = new URL(env.QP_URL).origin;
  const context = await browser.createBrowserContext();
  await context.overridePermissions(origin, ['notifications']);
  const page = await context.newPage();
  const cdp = await page.createCDPSession();
  await cdp.send('ServiceWorker.enable');
  let registrationId = null;
  cdp.on('ServiceWorker.workerRegistrationUpdated', ({ registrations }) => {
    for (const r of registrations) if (r.scopeURL.startsWith(`${origin}/app/`) && !r.isDeleted) registrationId = r.registrationId;
  });
  await page.goto(`${origin}/app/`, { waitUntil: 'load' });
  await page.waitForSelector('body[data-ready="1"]');
  // Signed in as the test's user (pairing itself is e2e.mjs's).
  await page.evaluate((token, id) => qpStore.saveSession({ token, user: { id, display_name: 'Alice' } }), env.USER_TOKEN, env.USER_ID);
  await page.reload({ waitUntil: 'load' });
  await page.waitForSelector('#feed-section:not([hidden])');
  await page.evaluate(() => navigator.serviceWorker.ready);
  await until('the worker registration', () => registrationId);
  const swTarget = await browser.waitForTarget((t) => t.type() === 'service_worker' && t.url().startsWith(`${origin}/app/`));
  const worker = await swTarget.worker();
  const maxActions = await worker.evaluate(() => Notification.maxActions);
  log('worker up; maxActions', maxActions);

  const deliver = (data) => cdp.send('ServiceWorker.deliverPushMessage', { origin, registrationId, data });
  const notifications = (tag) => page.evaluate(async (t) => {
    const reg = await navigator.serviceWorker.ready;
    return (await reg.getNotifications(t ? { tag: t } : undefined)).map((n) => ({ title: n.title, body: n.body, tag: n.tag, actions: n.actions.map((a) => [a.action, a.title]) }));
  }, tag);
  const press = (tag, action) => worker.evaluate(async (t, a) => {
    const [n] = await self.registration.getNotifications({ tag: t });
    self.dispatchEvent(new NotificationEvent('notificationclick', { notification: n, action: a }));
  }, tag, action);

  // --- a push reaches the open page through the worker ---------------------
  // The page's feed wait is held forever (as a slow network would), so only
  // the worker's hand-over can draw the question.
  await page.evaluate(() => {
    window.qpRealFetch = window.fetch;
    window.fetch = (input, init) => (String(input).includes('/api/questions/pending/wait')
      ? new Promise(() => {}) : window.qpRealFetch(input, init));
    window.dispatchEvent(new Event('online')); // a fresh wait, held
  });
  const q0 = await ask({ prompt: 'Handed over by the worker?' });
  await deliver(await nextPush());
  await page.waitForFunction((p) => [...document.querySelectorAll('li.cell .prompt')].some((e) => e.textContent === p),
    { timeout: 5000 }, 'Handed over by the worker?');
  log('a pushed question drawn in the open page by the worker, the feed wait held');
  await page.evaluate(() => {
    window.fetch = window.qpRealFetch;
    window.dispatchEvent(new Event('online'));
  });
  assert.equal((await call('POST', `/api/agent/questions/${q0.id}/cancel`, env.AGENT_TOKEN)).status, 200);
  await deliver(await nextPush());
  await until('the cancellation replacing it', async () => {
    const [n] = await notifications(q0.id);
    return n && n.title !== 'Release Bot asks you';
  });
  await page.evaluate(async (t) => { for (const n of await (await navigator.serviceWorker.ready).getNotifications({ tag: t })) n.close(); }, q0.id);

  // --- a question, shown with its buttons ------------------------------------
  const q1 = await ask({ prompt: 'Deploy v1.4?', context: 'Build 7', options: [
    { value: 'approve', label: 'Approve', style: 'primary' }, { value: 'deny', label: 'Deny', style: 'danger' }] });
  await deliver(await nextPush());
  const [n1] = await until('the notification', async () => (await notifications(q1.id))[0] && notifications(q1.id));
  assert.equal(n1.title, 'Release Bot asks you');
  assert.equal(n1.body, 'Deploy v1.4?\nBuild 7');
  assert.equal(n1.tag, q1.id);
  assert.deepEqual(n1.actions, [['qp.v.approve', 'Approve'], ['qp.v.deny', 'Deny']].slice(0, maxActions));
  log('shown:', n1.title, '|', n1.actions.map((a) => a[1]).join(', '));

  // --- its button answers without opening the app ---------------------------
  const pagesBefore = (await context.pages()).length;
  await press(q1.id, 'qp.v.approve');
  const a1 = await until('the answer on the server', async () => {
    const q = await question(q1.id);
    return q.state === 'answered' && q;
  });
  assert.equal(a1.answer.value, 'approve');
  await until('the resolution replacing it', async () => (await notifications(q1.id))[0]?.title === 'You answered: Approve');
  assert.equal((await notifications(q1.id)).length, 1);
  assert.equal((await context.pages()).length, pagesBefore, 'no window opened');
  // The server's own resolution push, when it comes, says the same.
  await deliver(await nextPush());
  await sleep(200);
  assert.equal((await notifications(q1.id))[0].title, 'You answered: Approve');
  log('answered from the button; replaced by the resolution');

  // --- a resolution made elsewhere replaces the notification -----------------
  const q2 = await ask({ prompt: 'Roll back?', options: ['Yes', 'No'] });
  await deliver(await nextPush());
  await until('q2 shown', async () => (await notifications(q2.id)).length === 1);
  const other = await call('POST', `/api/questions/${q2.id}/answer`, env.USER_TOKEN, { value: 'No' });
  assert.equal(other.status, 200);
  await deliver(await nextPush());
  await until('q2 replaced', async () => (await notifications(q2.id))[0]?.title === 'You answered: No');
  log('a resolution elsewhere replaced it');

  // --- a resolution while its notification is not showing: shown all the
  // same (quietly, under the question's tag), never a silent push ---------
  const q4 = await ask({ prompt: 'Drain the queue?', options: ['Yes', 'No'] });
  await deliver(await nextPush());
  await until('q4 shown', async () => (await notifications(q4.id)).length === 1);
  await worker.evaluate(async (t) => {
    for (const n of await self.registration.getNotifications({ tag: t })) n.close();
  }, q4.id);
  await until('q4 dismissed', async () => (await notifications(q4.id)).length === 0);
  assert.equal((await call('POST', `/api/questions/${q4.id}/answer`, env.USER_TOKEN, { value: 'Yes' })).status, 200);
  await deliver(await nextPush());
  const [r4] = await until('q4 resolution shown', async () => {
    const ns = await notifications(q4.id);
    return ns[0]?.title === 'You answered: Yes' && ns;
  });
  assert.equal(r4.body, 'Drain the queue?');
  assert.equal((await notifications(q4.id)).length, 1);
  log('a resolution with no notification showing is shown');

  // --- a payload that does not parse: "open the app" (qp-core's words) -----
  await deliver('not a payload of ours');
  const [fb] = await until('the fallback notification', async () => {
    const ns = await notifications('qp.fallback');
    return ns.length && ns;
  });
  assert.equal(fb.title, 'New question');
  assert.equal(fb.body, 'Open the app to answer.');
  log('an unreadable push shows the fallback');

  // --- an answer made offline is kept, then sent once -----------------------
  const q3 = await ask({ prompt: 'Restart the workers?', options: [{ value: 'go', label: 'Restart' }, 'Wait'] });
  await deliver(await nextPush());
  await until('q3 shown', async () => (await notifications(q3.id)).length === 1);
  // The worker and the page both go offline (the page flushes the outbox
  // too); answers reaching the server are counted on both.
  const swCdp = await swTarget.createCDPSession();
  let answerPosts = 0;
  for (const s of [swCdp, cdp]) {
    await s.send('Network.enable');
    s.on('Network.responseReceived', ({ response }) => {
      if (response.url.endsWith(`/api/questions/${q3.id}/answer`)) answerPosts++;
    });
  }
  await page.setOfflineMode(true);
  await swCdp.send('Network.emulateNetworkConditions', { offline: true, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
  await press(q3.id, 'qp.v.go');
  await until('shown as queued', async () => (await notifications(q3.id))[0]?.title === 'Restart: queued, will send when you’re online');
  assert.equal((await question(q3.id)).state, 'pending');
  assert.equal((await page.evaluate(() => qpStore.queued())).length, 1);
  await swCdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
  await page.setOfflineMode(false);
  // Back online: the page (its online event) and the worker (as background
  // sync would have it) both flush; the outbox's lock lets one send it.
  await page.evaluate(() => navigator.serviceWorker.ready.then((r) => r.active.postMessage({ type: 'flush' })));
  const a3 = await until('the queued answer on the server', async () => {
    const q = await question(q3.id);
    return q.state === 'answered' && q;
  });
  assert.equal(a3.answer.value, 'go');
  await until('q3 replaced', async () => (await notifications(q3.id))[0]?.title === 'You answered: Restart');
  assert.equal((await page.evaluate(() => qpStore.queued())).length, 0);
  // Flushing again sends nothing more: it was sent once.
  await page.evaluate(() => navigator.serviceWorker.ready.then((r) => r.active.postMessage({ type: 'flush' })));
  await sleep(500);
  assert.equal(answerPosts, 1, 'the offline answer was sent exactly once');
  log('offline answer kept, then sent once');
  // --- a registration the server refuses: its message, not "on" -----------
  // The browser's subscription is a stand-in (Chromium's push service is
  // not reachable here) whose endpoint no allowed push service has.
  await page.evaluate(() => {
    let fake = null;
    PushManager.prototype.subscribe = async function () {
      fake = {
        endpoint: 'https://push.invalid/x',
        options: {},
        toJSON: () => ({ endpoint: 'https://push.invalid/x', keys: { p256dh: 'x', auth: 'y' } }),
        unsubscribe: async () => true,
      };
      return fake;
    };
    PushManager.prototype.getSubscription = async function () { return fake; };
  });
  await page.click('#notify');
  // Settled: a message, or (the defect) the button saying they are on.
  await page.waitForFunction(() => document.getElementById('notify-status')?.textContent.length > 0
    || document.getElementById('notify').disabled, { timeout: 10000 });
  log('refused registration:', await page.$eval('#notify-status', (e) => e.textContent));
  assert.equal(await page.$eval('#notify', (b) => b.textContent), 'Turn on notifications');
  assert.equal(await page.$eval('#notify', (b) => b.disabled), false);
  console.log(`web push in chromium: ok in ${((Date.now() - started) / 1000).toFixed(1)} s`);
} finally {
  await browser.close();
}
process.exit(0);
