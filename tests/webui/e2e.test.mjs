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
    if (r.url().endsWith('/v1/chat/completions')) requests.push(JSON.parse(r.postData()));
  });
});

after(async () => {
  if (browser) await browser.close();
  if (server) await server.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

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
  await sendMessage('Tell me a very long story');
  await page.waitForFunction(() => {
    const b = [...document.querySelectorAll('.msg.assistant .bubble')].at(-1);
    return b && b.textContent.length > 40;
  });
  assert.equal(await page.isVisible('#stop'), true);
  await page.click('#stop');
  await idle();
  assert.match(await lastReply().locator('.stats').textContent(), /stopped/);
  let n = NaN;
  for (let i = 0; i < 100 && n !== 0; i++) {
    n = await running(server.base);
    if (n !== 0) await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(n, 0, 'the server still runs the stopped request');
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

test('dark theme and a phone-width window', async () => {
  await page.click('#toggle-theme');
  assert.equal(await page.getAttribute('html', 'data-theme'), 'dark');
  await page.setViewportSize({ width: 390, height: 800 });
  assert.equal(await page.isVisible('#input'), true);
  assert.equal(await page.isVisible('#sidebar'), false);
  await page.click('#toggle-sidebar');
  assert.equal(await page.isVisible('#sidebar'), true);
  await shot('08-dark-phone');
});

test('with --api-key the page asks for the key once and keeps it', async () => {
  const model = path.join(dir, 'tiny-qwen3.gguf');
  const keyed = await startServer(['-m', model, '--ctx', '2048', '-t', '1', '--api-key', 'sekrit']);
  try {
    const ctx = await browser.newContext();
    const p = await ctx.newPage();
    await p.goto(keyed.base);
    await p.waitForSelector('#key-dialog[open]');
    await p.screenshot({ path: path.join(shots, '09-api-key.png') });
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
    await p.screenshot({ path: path.join(shots, '10-loading.png') });
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
