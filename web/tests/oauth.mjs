// Signing an MCP client in, approved on the authorization page itself by a
// person signed in to the web responder in the same browser: real headless
// Chromium (puppeteer-core) against the real `qp serve` scripts/test-web
// started. The client is this script (registered by DCR, PKCE S256, a
// loopback redirect URI served here); the person pairs by link, opens the
// authorization page (their name shown as the account it will ask), asks,
// and taps Allow on the page;
// the browser lands on the client's redirect with the code, which this
// script exchanges and uses on /mcp. Then Deny the same way, and a browser
// that is not signed in, which is offered nothing but the phone; and the
// person choosing another account than the one signed in.
//
// Environment: QP_URL, QP_ROOM, QP_USER, LINK (a pairing link of the
// person), QP_OTHER_USER and QP_OTHER_NAME (another member of the room).
import { createServer } from 'node:http';
import { createHash, randomBytes } from 'node:crypto';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';

const require = createRequire(`${process.env.NODE_PATH}/`);
const puppeteer = require('puppeteer-core');

const env = process.env;
const base = env.QP_URL;
const started = Date.now();
const log = (...a) => console.log(`[${((Date.now() - started) / 1000).toFixed(1)}s]`, ...a);
const b64url = (buf) => buf.toString('base64').replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');

// The client's redirect URI: a loopback server that records what arrives.
const arrived = [];
const callback = createServer((req, res) => {
  arrived.push(new URL(req.url, 'http://127.0.0.1'));
  res.writeHead(200, { 'Content-Type': 'text/plain' });
  res.end('signed in');
});
await new Promise((r) => callback.listen(0, '127.0.0.1', r));
const redirectUri = `http://127.0.0.1:${callback.address().port}/callback`;

async function json(path, init) {
  const r = await fetch(`${base}${path}`, init);
  return { status: r.status, body: await r.json().catch(() => null) };
}

const reg = await json('/oauth/register', {
  method: 'POST',
  headers: { 'Content-Type': 'application/json' },
  body: JSON.stringify({ client_name: 'Browser Test Client', redirect_uris: [redirectUri] }),
});
assert.equal(reg.status, 201, JSON.stringify(reg.body));
const clientId = reg.body.client_id;

function authorizeUrl(verifier, state) {
  const q = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirectUri,
    code_challenge: b64url(createHash('sha256').update(verifier).digest()),
    code_challenge_method: 'S256',
    state,
    resource: `${base}/mcp`,
  });
  return `${base}/oauth/authorize?${q}`;
}

async function newPage(browser) {
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  const problems = [];
  // A CSP refusal shows as a console error: none may happen.
  page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
  page.on('pageerror', (e) => problems.push(String(e)));
  return { context, page, problems };
}

// Opens the authorization page, asks, and waits for the waiting page.
async function ask(page, verifier, state, { expectSignedIn }) {
  await page.goto(authorizeUrl(verifier, state), { waitUntil: 'load' });
  if (expectSignedIn) {
    await expectAccount(page, expectSignedIn);
  } else {
    assert.equal(await page.$eval('#account', (e) => e.hidden), true);
    await page.type('#user', env.QP_USER);
  }
  await page.type('input[name=room]', env.QP_ROOM);
  await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click('button[type=submit]')]);
  const heading = await page.$eval('h1', (e) => e.textContent).catch(async () => `no heading: ${await page.evaluate(() => document.body.innerText)}`);
  assert.equal(heading, 'Check your phone');
}

// The account the page will ask, named where a person looks: a box above
// the fields and the button itself, not an opaque id in a field.
async function expectAccount(page, user) {
  await page.waitForSelector('#account:not([hidden])', { timeout: 10000 });
  assert.equal(await page.$eval('#user', (e) => e.value), user.id, 'the person\'s id is filled in');
  // The page's words isolate the name (U+2068 … U+2069): a name in the
  // other direction keeps the sentence in order.
  const name = `\u2068${user.display_name}\u2069`;
  assert.equal(await page.$eval('#account', (e) => e.innerText.split('\n')[0]),
    `This browser is signed in to qp as ${name}: the question goes to their phone.`);
  assert.equal(await page.$eval('#ask', (e) => e.textContent), `Ask ${name} on their phone`);
  assert.equal(await page.$eval('#change-account', (e) => e.textContent), `Not ${name}? Ask another account`);
  assert.equal(await page.$eval('#user-label', (e) => e.hidden), true, 'the id is not what the person reads');
}

async function pairByLink(page, link) {
  await page.goto(link, { waitUntil: 'load' });
  await page.waitForSelector('#link-accept[aria-disabled="false"]', { timeout: 10000 });
  await page.click('#link-accept');
  await page.waitForSelector('#feed-section:not([hidden])', { timeout: 10000 });
}

// A person's click: the pointer moves over the page, the buttons arm after
// a moment in view, then the click.
async function approveOnPage(page, selector) {
  await page.bringToFront();
  await page.mouse.move(10, 10);
  await page.mouse.move(60, 40, { steps: 5 });
  await page.waitForSelector(`${selector}[aria-disabled="false"]`, { timeout: 5000 });
  await page.click(selector);
}

async function arrival(state, timeout = 30000) {
  const until = Date.now() + timeout;
  while (Date.now() < until) {
    const got = arrived.find((u) => u.searchParams.get('state') === state);
    if (got) return got;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`nothing arrived at the redirect URI for state ${state}`);
}

const browser = await puppeteer.launch({
  executablePath: env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run'],
});
try {
  // --- the person pairs the web responder by link ----------------------------
  const a = await newPage(browser);
  await pairByLink(a.page, env.LINK);
  const session = await a.page.evaluate(() => qpStore.session());
  assert.ok(session && session.token, 'a session in IndexedDB');
  log('paired as', session.user.id);

  // --- Allow, on the page ------------------------------------------------------
  const verifier = b64url(randomBytes(32));
  await ask(a.page, verifier, 'allow-state', { expectSignedIn: session.user });
  await a.page.waitForSelector('#here:not([hidden])', { timeout: 10000 });
  assert.equal(await a.page.$eval('#here-name', (e) => e.textContent), session.user.display_name);
  // The page says what it asks, as the phone does, with the code to compare.
  const code = await a.page.$eval('#code', (e) => e.textContent);
  const pending = await json('/api/questions/pending', { headers: { 'Authorization': `Bearer ${session.token}` } });
  const question = pending.body.questions.find((q) => q.prompt.includes('Browser Test Client'));
  assert.equal(question.context, `code ${code} · unverified client`);
  assert.equal(await a.page.$eval('#here-prompt', (e) => e.textContent), question.prompt);
  // Not armed until the page has been in view a moment and the person has
  // moved on it: a press before that does nothing.
  assert.equal(await a.page.$eval('#allow', (e) => e.getAttribute('aria-disabled')), 'true');
  await a.page.click('#allow');
  await new Promise((r) => setTimeout(r, 300));
  const stillPending = await json('/api/questions/pending', { headers: { 'Authorization': `Bearer ${session.token}` } });
  assert.ok(stillPending.body.questions.some((q) => q.id === question.id), 'a press before arming answered nothing');
  await approveOnPage(a.page, '#allow');
  const allowed = await arrival('allow-state');
  assert.equal(allowed.searchParams.get('iss'), base);
  const authCode = allowed.searchParams.get('code');
  assert.ok(authCode, `a code: ${allowed}`);
  await a.page.waitForFunction((r) => location.href.startsWith(r), { timeout: 10000 }, redirectUri);
  log('allowed on the page; the browser went back to the client with a code');
  const tokens = await json('/oauth/token', {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code: authCode, client_id: clientId, redirect_uri: redirectUri, code_verifier: verifier, resource: `${base}/mcp` }),
  });
  assert.equal(tokens.status, 200, JSON.stringify(tokens.body));
  const mcp = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { 'Authorization': `Bearer ${tokens.body.access_token}`, 'Content-Type': 'application/json', 'Accept': 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'browser-test', version: '0' } } }),
  });
  assert.equal(mcp.status, 200, 'the access token works on /mcp');
  // The approval made an agent the person owns.
  const mine = await json('/api/me/agents', { headers: { 'Authorization': `Bearer ${session.token}` } });
  assert.ok(mine.body.agents.some((x) => x.name === 'Browser Test Client' && x.rooms.includes(env.QP_ROOM)), JSON.stringify(mine.body));
  log('tokens exchanged; /mcp initialized');

  // --- Deny, on the page -------------------------------------------------------
  await ask(a.page, b64url(randomBytes(32)), 'deny-state', { expectSignedIn: session.user });
  await a.page.waitForSelector('#here:not([hidden])', { timeout: 10000 });
  // By keyboard alone: Tab to Deny (focusable while not yet armed), Enter.
  await a.page.bringToFront();
  await a.page.focus('#deny');
  await a.page.keyboard.press('Shift');
  await a.page.waitForSelector('#deny[aria-disabled="false"]', { timeout: 5000 });
  await a.page.keyboard.press('Enter');
  await a.page.waitForFunction(() => document.getElementById('msg').textContent.startsWith('Denied'), { timeout: 30000 });
  const denied = await arrival('deny-state');
  assert.equal(denied.searchParams.get('error'), 'access_denied');
  assert.equal(denied.searchParams.get('code'), null);
  log('denied on the page; the client was told access_denied');

  // --- a browser that is not signed in: only the phone --------------------------
  const b = await newPage(browser);
  await ask(b.page, b64url(randomBytes(32)), 'phone-state', { expectSignedIn: null });
  await new Promise((r) => setTimeout(r, 1500));
  assert.equal(await b.page.$eval('#here', (e) => e.hidden), true, 'no answer buttons without a session');
  log('a browser not signed in is offered only the phone');

  // --- another account than the one signed in, by one click ----------------------
  await a.page.goto(authorizeUrl(b64url(randomBytes(32)), 'other-state'), { waitUntil: 'load' });
  await expectAccount(a.page, session.user);
  await a.page.click('#change-account');
  assert.equal(await a.page.$eval('#account', (e) => e.hidden), true);
  assert.equal(await a.page.$eval('#user-label', (e) => e.hidden), false);
  assert.equal(await a.page.$eval('#user', (e) => e.value), '', 'the field is emptied for the other account');
  assert.equal(await a.page.evaluate(() => document.activeElement.id), 'user');
  assert.equal(await a.page.$eval('#ask', (e) => e.textContent), 'Ask me on my phone');
  await a.page.type('#user', env.QP_OTHER_USER);
  await a.page.type('input[name=room]', env.QP_ROOM);
  await Promise.all([a.page.waitForNavigation({ waitUntil: 'load' }), a.page.click('button[type=submit]')]);
  assert.match(await a.page.$eval('#msg', (e) => e.textContent), new RegExp(`^We asked \u2068${env.QP_OTHER_NAME}\u2069 on their phone`));
  log('another account asked instead of the one signed in');

  for (const c of [a, b]) assert.deepEqual(c.problems, [], 'no script errors, nothing refused by the CSP');
  await b.context.close();
  await a.context.close();
  log('ok');
} finally {
  await browser.close();
  callback.close();
}
