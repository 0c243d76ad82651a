// Every word a person meets in a browser, in their language: real headless
// Chromium against the `qp serve` that scripts/test-web started. A German
// browser goes through every surface (the pairing screen and a failed
// code, a pairing link, the feed with a question of four options and a
// reply field, the sheet, offline, an answer the server refused for good
// (Federica taken out of the room), notifications the server would not
// register (a stand-in subscription, refused by the real server), the sign-in consent
// question from `qp login --url`, the OAuth authorization page) and no
// sentence of an English message file (the web's, the phone copy's, the
// sign-in pages') shows; only names and the askers' and client's own text
// may be other than German. Then an Arabic browser shows the consent
// question right to left with a Hebrew room name intact (isolated).
//
// Environment: QP (the qp binary), QP_DB (its database, for `qp admin`),
// FED (Federica's user id), QP_URL, QP_ROOM, LINK and LINK_AR
// (pairing links of Federica), HEB_ROOM (the code of a room with a Hebrew
// name she is in) and HEB_NAME (its name), the asker's QP_CONFIG_DIR.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';

const require = createRequire(`${process.env.NODE_PATH}/`);
const puppeteer = require('puppeteer-core');

const env = process.env;
const log = (...a) => console.log('words.mjs:', ...a);
const FSI = '\u2068';
// What this test asks (its cells are read whole, buttons included).
const OURS = ['Welche Version soll ausgerollt werden?', 'Build Agent', env.HEB_NAME];
const PDI = '\u2069';

// ---- the English files' sentences --------------------------------------------

// Each message's (and each variant's) literal text between placeables:
// the runs of two words or more, and the one-word messages.
function englishOf(path) {
  const runs = new Set();
  const words = new Set();
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (line.startsWith('#')) continue;
    let value = null;
    const eq = line.indexOf(' = ');
    if (eq > 0 && !line.startsWith(' ')) value = line.slice(eq + 3);
    else if (/^\s+\*?\[[^\]]+\] /.test(line)) value = line.replace(/^\s+\*?\[[^\]]+\] /, '');
    if (value === null) continue;
    const parts = value.split(/\{[^}]*\}/).map((p) => p.replace(/^[\s:;,.()“”"?…·-]+|[\s:;,.()“”"?…·-]+$/g, ''));
    for (const p of parts) {
      if (/\S+\s+\S+/.test(p) && p.length >= 8) runs.add(p);
      else if (parts.length === 1 && /^[A-Za-z]{4,}$/.test(p)) words.add(p);
    }
  }
  return { runs, words };
}
const english = ['web/wasm/locales/en.ftl', 'core/locales/en.ftl', 'server/locales/en.ftl'].map(englishOf);
const runs = english.flatMap((e) => [...e.runs]);
const oneWord = new Set(english.flatMap((e) => [...e.words]));
assert.ok(runs.length > 80, `English sentences read: ${runs.length}`);

// What the page shows: its title, its visible text (node by node: a
// button's word alone is one), labels and placeholders. The askers' own
// text (prompt, context, labels) of cells other tests asked, in English,
// is theirs and left out; the cells `ours` names are read whole.
async function shown(page) {
  return page.evaluate((ours) => {
    const visible = (e) => !!(e.offsetWidth || e.offsetHeight || e.getClientRects().length);
    const theirs = (e) => {
      const li = e.closest('li.cell');
      if (!li || !e.closest('.prompt, .context, button.answer, .resolution')) return false;
      const prompt = li.querySelector('.prompt')?.textContent || '';
      return !ours.some((m) => prompt.includes(m));
    };
    const texts = [];
    const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      const e = n.parentElement;
      const t = n.textContent.trim();
      if (t && e && visible(e) && !theirs(e)) texts.push(t);
    }
    const attrs = [...document.querySelectorAll('[placeholder], [aria-label], [title]')]
      .filter(visible)
      .flatMap((e) => [e.getAttribute('placeholder'), e.getAttribute('aria-label'), e.getAttribute('title')])
      .filter(Boolean);
    return { all: [document.title, ...texts, ...attrs].join('\n'), leaves: [...texts, ...attrs] };
  }, OURS);
}

// No English sentence on the page (`where` names the surface).
async function noEnglish(page, where) {
  const { all, leaves } = await shown(page);
  const text = all.replaceAll(FSI, '').replaceAll(PDI, '');
  const found = runs.filter((r) => text.includes(r));
  assert.deepEqual(found, [], `${where}: English on the page:\n${all}`);
  // A one-word message ("Allow", "Send") as a word of its own anywhere,
  // inside a status line too ("Allow: wird gesendet…").
  const words = leaves.filter((l) => [...oneWord].some((w) =>
    new RegExp(`(^|[^\\p{L}\\p{N}])${w}([^\\p{L}\\p{N}]|$)`, 'u').test(l.replaceAll(FSI, '').replaceAll(PDI, ''))));
  assert.deepEqual(words, [], `${where}: an English word on the page:\n${all}`);
  return all;
}

// ---- helpers -------------------------------------------------------------------

function run(args, extraEnv = {}) {
  const child = spawn(env.QP, args, { env: { ...env, ...extraEnv }, stdio: ['ignore', 'pipe', 'pipe'] });
  const said = { out: '', err: '' };
  child.stdout.on('data', (d) => { said.out += d; });
  child.stderr.on('data', (d) => { said.err += d; });
  const done = new Promise((resolve) => child.on('exit', (code) => resolve({ out: said.out.trim(), code, err: said.err })));
  return { child, done, said };
}

// The cell of `part`, or a failure that says what the page and `proc`
// (the qp process that should have asked it) showed.
async function cellFor(page, part, proc) {
  try {
    return await cellWhere(page, part, 20000);
  } catch (e) {
    const feed = await page.evaluate(() => [...document.querySelectorAll('li.cell')].map((li) => li.innerText).join(' | '));
    throw new Error(`no cell with "${part}"; qp said: ${proc.said.out} ${proc.said.err}; the feed: ${feed}`);
  }
}

// `qp login --url` without a code, from a machine of its own: the server
// asks Federica (the consent question) in the room `room`.
function loginAsking(room) {
  const dir = mkdtempSync(join(tmpdir(), 'qp-words-'));
  const extra = { QP_CONFIG_DIR: dir, QP_TOKEN: '' };
  return run(['login', '--url', env.QP_URL, '--as', 'Federica', '--room', room, '--label', 'Build Agent'], extra);
}

async function newPage(browser, languages) {
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  await page.setViewport({ width: 420, height: 900 });
  await page.evaluateOnNewDocument((langs) => {
    Object.defineProperty(navigator, 'languages', { get: () => langs });
    Object.defineProperty(navigator, 'language', { get: () => langs[0] });
  }, languages);
  await page.setExtraHTTPHeaders({ 'Accept-Language': languages.join(', ') });
  const problems = [];
  page.on('pageerror', (e) => problems.push(String(e)));
  return { context, page, problems };
}

// The cell whose prompt satisfies `match` (a string it contains).
async function cellWhere(page, part, timeout = 15000) {
  const h = await page.waitForFunction((p) => [...document.querySelectorAll('li.cell')]
    .find((li) => (li.querySelector('.prompt')?.textContent || '').includes(p)) || null, { timeout }, part);
  return h.asElement();
}

const browser = await puppeteer.launch({
  executablePath: env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run'],
});
const asked = [];
try {
  // --- the check itself: an English page fails it -----------------------------
  const en = await newPage(browser, ['en']);
  await en.page.goto(`${env.QP_URL}/app/`, { waitUntil: 'load' });
  await en.page.waitForSelector('#pair:not([hidden])');
  await assert.rejects(noEnglish(en.page, 'English'), /English on the page/);
  await en.context.close();

  // --- German: the pairing screen and a code that does not work ------------
  const de = await newPage(browser, ['de-DE', 'de']);
  const { page } = de;
  await page.goto(`${env.QP_URL}/app/`, { waitUntil: 'load' });
  await page.waitForSelector('body[data-ready="1"]');
  await page.waitForSelector('#pair:not([hidden])');
  assert.equal(await page.evaluate(() => document.documentElement.lang), 'de');
  await noEnglish(page, 'the pairing screen');
  await page.type('#pair-code', 'ABCD-EFGH-JKLM-NPQR');
  await page.click('#pair-form button[type="submit"]');
  await page.waitForFunction(() => {
    const s = document.getElementById('pair-status').textContent;
    return s && !s.endsWith('…');
  }, { timeout: 10000 });
  await noEnglish(page, 'a pairing code that does not work');
  log('the pairing screen and a failed code: German');

  // --- a pairing link, then the feed -------------------------------------------
  await page.goto(env.LINK, { waitUntil: 'load' });
  await page.waitForSelector('#link-accept[aria-disabled="false"]', { timeout: 10000 });
  await noEnglish(page, 'a pairing link');
  await page.click('#link-accept');
  await page.waitForSelector('#feed-section:not([hidden])', { timeout: 10000 });

  const prompt = 'Welche Version soll ausgerollt werden?';
  const ask = run(['ask', env.QP_ROOM, prompt, '--option', 'Eins', '--option', 'Zwei', '--option', 'Drei',
    '--option', 'Vier', '--text', '--ttl', '3600', '--wait']);
  asked.push(ask.child);
  const cell = await cellWhere(page, prompt);
  await cell.$eval('form.reply input', (e) => e.focus());
  await page.keyboard.type('Hallo');
  await noEnglish(page, 'the feed with a question of four options and a reply field');
  const choose = await cell.$('button.choose');
  assert.ok(choose, 'four options open a sheet');
  await choose.click();
  await page.waitForSelector('#sheet[open]');
  await noEnglish(page, 'the sheet of choices');
  await page.click('#sheet-close');
  log('a pairing link, the feed, the reply field and the sheet: German');

  // --- the sign-in consent question (qp login --url) ---------------------------
  const login = loginAsking(env.QP_ROOM);
  asked.push(login.child);
  const consent = await cellFor(page, 'Build Agent', login);
  await noEnglish(page, 'the sign-in consent question');
  const buttons = await consent.$$('.buttons button.answer');
  assert.equal(buttons.length, 2, 'Allow and Deny');
  await buttons[1].click();
  await page.waitForFunction(() => [...document.querySelectorAll('li.cell')]
    .some((li) => li.innerText.includes('Build Agent') && li.querySelector('.resolution')), { timeout: 10000 });
  await noEnglish(page, 'the consent question answered');
  const denied = await login.done;
  assert.notEqual(denied.code, 0, 'qp login denied');
  log('the consent question and its answer: German');

  // --- offline --------------------------------------------------------------------
  await page.setOfflineMode(true);
  await page.waitForFunction(() => document.getElementById('net-status').textContent, { timeout: 5000 });
  await noEnglish(page, 'offline');
  await page.setOfflineMode(false);

  // --- an answer refused for good; notifications the server refused ---------
  // The real server's refusal: Federica leaves the room, then answers its
  // question (403 or 404), and is let back in after.
  const sheetOrButtons = await cellWhere(page, prompt);
  const left = run(['admin', 'room', 'remove-member', env.QP_ROOM, env.FED]);
  assert.equal((await left.done).code, 0, `remove-member: ${left.said.err}`);
  const chooser = await sheetOrButtons.$('button.choose');
  if (chooser) {
    await chooser.click();
    await page.waitForSelector('#sheet[open]');
    const [first] = await page.$$('#sheet-options button');
    await first.click();
  } else {
    const [first] = await sheetOrButtons.$$('.buttons button.answer');
    await first.click();
  }
  const note = await page.waitForFunction((p) => {
    const li = [...document.querySelectorAll('li.cell')].find((c) => c.querySelector('.prompt')?.textContent === p);
    const t = li && li.querySelector('.status')?.textContent;
    return t && /\b40[34]\b/.test(t) ? t : null;
  }, { timeout: 10000 }, prompt);
  const noteText = await note.jsonValue();
  assert.ok(!/versuch es noch einmal/.test(noteText), `a refusal for good is not "try again": ${noteText}`);
  await noEnglish(page, 'an answer refused for good');
  const back = run(['admin', 'room', 'add-member', env.QP_ROOM, env.FED]);
  assert.equal((await back.done).code, 0, `add-member: ${back.said.err}`);
  log('an answer refused for good: German, with its code, not "try again"');

  await de.context.overridePermissions(env.QP_URL, ['notifications']);
  await page.evaluate(() => {
    const fake = {
      endpoint: 'https://push.stand-in.invalid/qp-words',
      options: { applicationServerKey: new ArrayBuffer(0) },
      toJSON() { return { endpoint: this.endpoint, keys: { p256dh: 'stand-in', auth: 'stand-in' } }; },
      async unsubscribe() { return true; },
    };
    PushManager.prototype.getSubscription = async () => null;
    PushManager.prototype.subscribe = async () => fake;
  });
  await page.waitForSelector('#notify:not([hidden])');
  await page.click('#notify');
  const why = await page.waitForFunction(() => document.getElementById('notify-status').textContent || null, { timeout: 5000 });
  const whyText = await why.jsonValue();
  // The real server refuses the stand-in subscription (its keys are not
  // keys): a 4xx, said in German.
  assert.match(whyText, /\b4\d\d\b/, whyText);
  assert.ok(!/push_token|p256dh|endpoint/.test(whyText), `the server's English: ${whyText}`);
  await noEnglish(page, 'notifications the server refused');
  log('notifications the server refused: German, never its English');

  // --- the OAuth sign-in page ----------------------------------------------------
  const reg = await fetch(`${env.QP_URL}/oauth/register`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ client_name: 'Words Client', redirect_uris: ['http://127.0.0.1:9/callback'] }),
  }).then((r) => r.json());
  const q = new URLSearchParams({
    response_type: 'code',
    client_id: reg.client_id,
    redirect_uri: 'http://127.0.0.1:9/callback',
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
    state: 'words',
    resource: `${env.QP_URL}/mcp`,
  });
  await page.goto(`${env.QP_URL}/oauth/authorize?${q}`, { waitUntil: 'load' });
  assert.equal(await page.evaluate(() => document.documentElement.lang), 'de');
  await noEnglish(page, 'the authorization page');
  log('the authorization page: German');
  assert.deepEqual(de.problems, []);

  // --- Arabic: the consent question right to left, a Hebrew room intact ------
  const ar = await newPage(browser, ['ar']);
  await ar.page.goto(env.LINK_AR, { waitUntil: 'load' });
  await ar.page.waitForSelector('#link-accept[aria-disabled="false"]', { timeout: 10000 });
  await ar.page.click('#link-accept');
  await ar.page.waitForSelector('#feed-section:not([hidden])', { timeout: 10000 });
  const heb = loginAsking(env.HEB_ROOM);
  asked.push(heb.child);
  const arCell = await cellFor(ar.page, env.HEB_NAME, heb);
  assert.equal(await ar.page.evaluate(() => document.documentElement.dir), 'rtl');
  assert.equal(await ar.page.evaluate(() => document.documentElement.lang), 'ar');
  const arPrompt = await arCell.$eval('.prompt', (e) => e.textContent);
  // The room's name whole, isolated, inside an Arabic sentence; the
  // client's name quoted and isolated too.
  assert.ok(arPrompt.includes(`${FSI}${env.HEB_NAME}${PDI}`), `the Hebrew room isolated: ${JSON.stringify(arPrompt)}`);
  assert.ok(arPrompt.includes(`${FSI}Build Agent${PDI}`), `the client's name isolated: ${JSON.stringify(arPrompt)}`);
  assert.match(arPrompt, /[\u0600-\u06FF]{3}/, `an Arabic sentence: ${arPrompt}`);
  const arTitle = await arCell.$eval('.title', (e) => e.textContent);
  assert.match(arTitle, /[\u0600-\u06FF]{3}/, `an Arabic title: ${arTitle}`);
  const dirOf = await arCell.$eval('.prompt', (e) => getComputedStyle(e).direction);
  assert.equal(dirOf, 'rtl');
  await noEnglish(ar.page, 'the consent question in Arabic');
  mkdirSync(env.SHOTS || '/tmp', { recursive: true });
  await ar.page.screenshot({ path: `${env.SHOTS || '/tmp'}/consent-arabic-hebrew-room.png` });
  const arButtons = await arCell.$$('.buttons button.answer');
  await arButtons[1].click();
  assert.notEqual((await heb.done).code, 0, 'qp login denied');
  assert.deepEqual(ar.problems, []);
  log('the consent question in Arabic, right to left, the Hebrew room intact');
} finally {
  for (const c of asked) c.kill();
  await browser.close();
}
console.log('words.mjs: ok');
process.exit(0);
