// The web chat in a real browser (Debian's chromium through playwright-core) against the real
// `hearth serve` on a tiny random-weight Qwen3 (real vocabulary and chat template). Each state
// is saved as a screenshot in $HEARTH_WEBUI_ARTIFACTS.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { chromium } from 'playwright-core';
import { startServer as startHearth } from '../server/js/start_server.mjs';

const bin = process.env.HEARTH_BIN;
const shots = process.env.HEARTH_WEBUI_ARTIFACTS;
const vocab = path.join(process.env.HEARTH_SHARED, 'tokenizers', 'vocab-qwen3.gguf');

const startServer = (args) => startHearth(bin, args);

async function running(base, key) {
  const r = await fetch(`${base}/metrics`, key ? { headers: { Authorization: `Bearer ${key}` } } : {});
  const m = /^hearth_requests_running\s+(\d+)/m.exec(await r.text());
  return m ? Number(m[1]) : NaN;
}

let dir, server, browser, page;
const dialogs = [];
const requests = [];
const urls = [];  // every request the page made
// Console errors, script errors, failed requests and error answers on the page, in order.
const problems = [];

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-webui-'));
  const model = path.join(dir, 'tiny-qwen3.gguf');
  execFileSync(bin, ['synth', '--preset', 'tiny-qwen3', '--vocab', vocab, '--type', 'Q8_0', '-o', model],
               { stdio: 'ignore' });
  server = await startServer(['-m', model, '--ctx', '16384', '-t', '2']);
  browser = await chromium.launch({ executablePath: process.env.HEARTH_CHROMIUM,
                                    args: ['--no-sandbox', '--disable-gpu'] });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  page = await context.newPage();
  page.on('dialog', async (d) => {
    dialogs.push(`${d.type()}: ${d.message()}`);
    if (d.type() === 'prompt') await d.accept('Renamed chat');
    else if (d.type() === 'confirm') await d.accept();
    else await d.dismiss();
  });
  page.on('request', (r) => {
    urls.push(r.url());
    if (r.url().endsWith('/v1/chat/completions')) requests.push(JSON.parse(r.postData()));
  });
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console error: ${m.text()} (${m.location().url})`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`failed: ${r.url()} (${r.failure().errorText})`));
  page.on('response', (r) => {
    if (r.status() >= 400) problems.push(`${r.status()}: ${r.url()}`);
  });
});

after(async () => {
  if (browser) await browser.close();
  if (server) await server.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const shot = (name) => page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true });
const idle = () => page.waitForSelector('#stop', { state: 'hidden', timeout: 60000 });
const lastReply = () => page.locator('.msg.assistant').last();

async function sendMessage(text) {
  await page.fill('#input', text);
  await page.press('#input', 'Enter');
}

async function setSampler(name, value) {
  await page.fill(`#s-${name}`, String(value));
  await page.dispatchEvent(`#s-${name}`, 'change');
}

test('loads the page with its security headers and the server facts', async () => {
  const res = await page.goto(server.base);
  assert.equal(res.status(), 200);
  const csp = res.headers()['content-security-policy'];
  assert.match(csp, /script-src 'self'/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
  await page.waitForSelector('body[data-ready="1"]');
  await page.click('#server-facts summary');
  assert.match(await page.textContent('#props'), /context\s*16384/);
  // What a first visit costs on loopback: bytes over the wire (gzip) and time to interactive
  // (navigation start to the page's 'hearth-ready' mark, set once it can send).
  const cost = await page.evaluate(() => {
    const nav = performance.getEntriesByType('navigation')[0];
    const res = performance.getEntriesByType('resource').filter((r) => r.name.includes('/assets/'));
    return { bytes: nav.transferSize + res.reduce((n, r) => n + r.transferSize, 0),
             assets: res.map((r) => r.encodedBodySize < r.decodedBodySize),
             ready: performance.getEntriesByName('hearth-ready')[0].startTime };
  });
  assert.deepEqual(cost.assets, [true, true], 'assets arrive gzip-compressed');
  console.log(`page weight ${cost.bytes} bytes transferred, interactive at ${cost.ready.toFixed(0)} ms`);
  await shot('01-loaded');
});

test('the page loads without a console error or a failed request', async () => {
  // The browser asks for an icon after the load event (a 404 for /favicon.ico without the page's
  // own); give it the time to.
  await sleep(1000);
  assert.deepEqual(problems, []);
});

test('sends with Enter, streams a reply, and shows its token and cache figures', async () => {
  await page.click('#toggle-settings');
  await setSampler('temperature', 0);
  await setSampler('max_tokens', 24);
  await page.fill('#s-system', 'You are a helpful assistant. '.repeat(20));
  await page.dispatchEvent('#s-system', 'change');
  await shot('02-samplers');
  await sendMessage('Hello there');
  await idle();
  const req = requests.at(-1);
  assert.equal(req.temperature, 0);
  assert.equal(req.max_tokens, 24);
  assert.equal(req.stream, true);
  assert.equal(req.messages[0].role, 'system');
  assert.deepEqual(req.messages.at(-1), { role: 'user', content: 'Hello there' });
  assert.ok((await lastReply().locator('.bubble').textContent()).length > 0);
  const stats = await lastReply().locator('.stats').textContent();
  assert.match(stats, /prompt \d+ · cached \d+ · prefilled \d+ · first token \d+ ms/);
  assert.match(stats, /24 generated/);
  await shot('03-reply');
});

test('Stop ends a long reply mid-stream and the server stops generating', async () => {
  await setSampler('max_tokens', 12000);
  const response = page.waitForResponse((r) => r.url().endsWith('/v1/chat/completions'));
  await sendMessage('Tell me a very long story');
  await page.waitForFunction(() => {
    const b = [...document.querySelectorAll('.msg.assistant .bubble')].at(-1);
    return b && b.textContent.length > 40;
  });
  assert.equal(await page.isVisible('#stop'), true);
  assert.ok(await running(server.base) > 0, 'generating before Stop');
  await page.click('#stop');  // the page has aborted its request once the click returns
  // The server cancels a generation when its connection closes. A browser may keep an aborted
  // reply's connection open to read the rest of it (up to 16 KiB, seconds of tokens at a real
  // model's speed), the server generating all along, unless the reply ends its connection.
  const t0 = Date.now();
  let n = await running(server.base);
  while (n !== 0 && Date.now() - t0 < 1000) {
    await sleep(10);
    n = await running(server.base);
  }
  const ms = Date.now() - t0;
  assert.equal(n, 0, `the server still runs the stopped request ${ms} ms after Stop`);
  console.log(`Stop: the server stopped generating ${ms} ms after the click`);
  assert.equal((await response).headers().connection, 'close',
               'a streamed reply ends its connection, so that Stop ends the generation');
  await idle();
  assert.match(await lastReply().locator('.stats').textContent(), /stopped/);
  await shot('04-stopped');
});

test('edit and resend reuses the cached prefix', async () => {
  await setSampler('max_tokens', 16);
  await page.locator('.msg.user').first().locator('button.edit').click();
  await page.fill('.msg.user textarea.edit', 'Hello there, edited');
  await page.click('.msg.user button.edit-send');
  await idle();
  assert.equal(await page.locator('.msg').count(), 2, 'the turns after the edit are replaced');
  assert.equal(requests.at(-1).messages.at(-1).content, 'Hello there, edited');
  const m = /cached (\d+)/.exec(await lastReply().locator('.stats').textContent());
  assert.ok(m && Number(m[1]) > 0, 'cached tokens after an edit');
  await shot('05-edited');
});

test('regenerate replaces the last reply', async () => {
  const before = requests.length;
  await lastReply().locator('button.regenerate').click();
  await idle();
  assert.equal(requests.length, before + 1);
  assert.equal(await page.locator('.msg.assistant').count(), 1);
});

test('a reload keeps the conversation; rename works', async () => {
  await page.reload();
  await page.waitForSelector('body[data-ready="1"]');
  const ready = await page.evaluate(() => performance.getEntriesByName('hearth-ready')[0].startTime);
  console.log(`reload: interactive at ${ready.toFixed(0)} ms`);
  assert.equal(await page.locator('.msg.user .bubble').first().textContent(), 'Hello there, edited');
  await page.locator('#conv-list li.current button.rename').click();
  assert.equal(await page.textContent('#conv-list li.current .title'), 'Renamed chat');
  assert.equal(await page.inputValue('#s-max_tokens'), '16', 'samplers persist per conversation');
  await shot('06-reloaded');
});

test('markup and script in replies and messages render as text', async () => {
  const xss = '<img src=x onerror=alert(1)> and [click me](javascript:alert(2))';
  const exported = { hearth_conversations: 1, conversations: [{
    id: 'xss', title: 'XSS', created: 1, updated: 1, samplers: {},
    messages: [{ role: 'user', content: `<script>alert(3)</script>${xss}` },
               { role: 'assistant', content: `Here: ${xss}\n\n\`\`\`js\nconsole.log(1)\n\`\`\``,
                 reasoning: 'thinking <b>hard</b>' }] }] };
  const file = path.join(dir, 'import.json');
  fs.writeFileSync(file, JSON.stringify(exported));
  await page.setInputFiles('#import', file);
  await page.locator('#conv-list li .title', { hasText: 'XSS' }).click();
  const reply = lastReply();
  assert.equal(await reply.locator('.bubble img').count(), 0);
  assert.equal(await page.locator('a[href^="javascript"]').count(), 0);
  assert.match(await reply.locator('.bubble').textContent(), /<img src=x onerror=alert\(1\)>/);
  assert.match(await reply.locator('.bubble').textContent(), /\[click me\]\(javascript:alert\(2\)\)/);
  assert.match(await page.locator('.msg.user .bubble').first().textContent(), /<script>alert\(3\)<\/script>/);
  assert.equal(await reply.locator('details.reasoning').count(), 1);
  assert.match(await reply.locator('details.reasoning').textContent(), /thinking <b>hard<\/b>/);
  assert.equal(await reply.locator('pre button.copy').count(), 1);
  assert.equal(dialogs.filter((d) => d.startsWith('alert')).length, 0, 'no script ran');
  await shot('07-xss-as-text');
});

test('no script of the page parses a string as markup', () => {
  // Stored and imported values reach the page as text nodes; model text goes through marked and
  // DOMPurify, which hands back nodes (render.js). No HTML string is ever assigned.
  const src = new URL('../../webui/src/', import.meta.url).pathname;
  for (const name of fs.readdirSync(src).filter((n) => n.endsWith('.js'))) {
    const code = fs.readFileSync(path.join(src, name), 'utf8').replace(/\/\/.*$/gm, '');
    const markup =
      /\.(innerHTML|outerHTML)\s*=|insertAdjacentHTML|document\.write|createContextualFragment|DOMParser/;
    assert.doesNotMatch(code, markup, name);
  }
});

test('the figures of an imported reply show its stats as text, never as markup', async () => {
  const seen = urls.length;
  const known = problems.length;
  const stats = { prompt_tokens: '<img src=/stats-img onerror=alert(5)>',
                  cached_tokens: '<a href="https://example.com/">link</a>',
                  prefilled_tokens: '<b>1</b><img src=x>',
                  completion_tokens: '<a href=/stats-link><img src=/stats-img2></a>',
                  ttft_ms: '<img src=/stats-img3>', stopped: true };
  const exported = { hearth_conversations: 1, conversations: [{
    id: 'stats', title: 'Stats markup', created: 2, updated: 2, samplers: {},
    messages: [{ role: 'user', content: 'Hi' },
               { role: 'assistant', content: 'Hello', stats }] }] };
  const file = path.join(dir, 'import-stats.json');
  fs.writeFileSync(file, JSON.stringify(exported));
  await page.setInputFiles('#import', file);
  await page.locator('#conv-list li .title', { hasText: 'Stats markup' }).click();
  const figures = lastReply().locator('.stats');
  await figures.waitFor();
  assert.equal(await figures.locator('img').count(), 0);
  assert.equal(await figures.locator('a').count(), 0);
  // Only the figures' own <b>, one a value: prompt, cached, prefilled (a string ttft_ms is no
  // number, so it is left out).
  const tags = await figures.evaluate((el) => [...el.querySelectorAll('*')].map((e) => e.tagName));
  assert.deepEqual(tags, ['B', 'B', 'B']);
  assert.equal(await figures.textContent(),
               `prompt ${stats.prompt_tokens} · cached ${stats.cached_tokens} · prefilled ` +
               `${stats.prefilled_tokens} · ${stats.completion_tokens} generated · stopped`);
  await sleep(300);  // an <img> made of the stats would have asked for its source by now
  assert.deepEqual(urls.slice(seen).filter((u) => /stats-|\/x$/.test(u)), []);
  assert.deepEqual(problems.slice(known), []);
  assert.equal(dialogs.filter((d) => d.startsWith('alert')).length, 0, 'no script ran');
  await shot('08-stats-as-text');
});

test('dark theme and a phone-width window', async () => {
  await page.click('#toggle-theme');
  assert.equal(await page.getAttribute('html', 'data-theme'), 'dark');
  await page.setViewportSize({ width: 390, height: 800 });
  assert.equal(await page.isVisible('#input'), true);
  assert.equal(await page.isVisible('#sidebar'), false);
  await page.click('#toggle-sidebar');
  assert.equal(await page.isVisible('#sidebar'), true);
  await shot('09-dark-phone');
});

test('with --api-key the page asks for the key once and keeps it', async () => {
  const model = path.join(dir, 'tiny-qwen3.gguf');
  const keyed = await startServer(['-m', model, '--ctx', '2048', '-t', '1', '--api-key', 'sekrit']);
  try {
    const ctx = await browser.newContext();
    const p = await ctx.newPage();
    await p.goto(keyed.base);
    await p.waitForSelector('#key-dialog[open]');
    await p.screenshot({ path: path.join(shots, '10-api-key.png') });
    await p.fill('#key-input', 'sekrit');
    await p.click('#key-save');
    await p.waitForSelector('body[data-ready="1"]');
    await p.click('#server-facts summary');
    assert.match(await p.textContent('#props'), /context\s*2048/);
    await p.reload();
    await p.waitForSelector('body[data-ready="1"]');
    assert.equal(await p.isVisible('#key-dialog'), false, 'asked only once');
    await ctx.close();
  } finally {
    await keyed.stop();
  }
});

test('a page opened while the model loads says so and fills in once it is up', async () => {
  const ctx = await browser.newContext();
  const p = await ctx.newPage();
  // The first two /props calls answer as a loading server does (503, Retry-After: 1).
  let refused = 0;
  await p.route('**/props', (route) => {
    if (refused >= 2) return route.continue();
    refused++;
    return route.fulfill({
      status: 503,
      headers: { 'Retry-After': '1', 'Content-Type': 'application/json' },
      body: JSON.stringify({ error: { message: 'Loading model', type: 'unavailable_error',
                                      code: 'model_loading' } }),
    });
  });
  try {
    await p.goto(server.base);
    await p.waitForSelector('body[data-ready="1"]');
    assert.match(await p.textContent('#status'), /Loading model.*asking again/);
    assert.equal(await p.getAttribute('#s-temperature', 'placeholder'), 'default');
    await p.screenshot({ path: path.join(shots, '11-loading.png') });
    // No reload: the page asks again by itself.
    await p.waitForFunction(() => document.getElementById('props').textContent.includes('16384'),
                            null, { timeout: 15000 });
    assert.equal(refused, 2);
    assert.equal((await p.textContent('#status')).trim(), '');
    assert.notEqual(await p.getAttribute('#s-temperature', 'placeholder'), 'default');
  } finally {
    await ctx.close();
  }
});
