// The real `hearth serve` driven by the official openai npm client and by raw HTTP.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import OpenAI from 'openai';
import { startServer } from './serve.mjs';

const BIN = process.env.HEARTH_BIN;
const MODEL = process.env.HEARTH_TEST_MODEL;
let proc;
let base;
let client;

before(async () => {
  ({ proc, base } = await startServer(BIN, ['-m', MODEL, '--ctx', '512', '-t', '2',
                                            '--alias', 'stories', '--max-body', '64K']));
  client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'unused', maxRetries: 0 });
});

after(async () => {
  if (!proc) return;
  proc.kill('SIGTERM');
  const code = await new Promise((r) => proc.on('exit', (c, s) => r(c ?? s)));
  assert.equal(code, 0, 'graceful shutdown exits 0');
});

const waitIdle = async () => {
  for (let i = 0; i < 400; i++) {
    const slots = await (await fetch(`${base}/slots`)).json();
    if (slots.length === 0) return true;
    await new Promise((r) => setTimeout(r, 25));
  }
  return false;
};

test('models lists the served model', async () => {
  const list = await client.models.list();
  assert.equal(list.data[0].id, 'stories');
});

test('chat completion, not streamed, with usage', async () => {
  const r = await client.chat.completions.create({
    model: 'stories', messages: [{ role: 'user', content: 'Tell me a story' }],
    max_tokens: 16, temperature: 0,
  });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(typeof r.choices[0].message.content, 'string');
  assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
  assert.ok(r.usage.prompt_tokens > 0);
  assert.ok(r.usage.completion_tokens <= 16);
  assert.equal(typeof r.usage.prompt_tokens_details.cached_tokens, 'number');
});

test('chat streamed: role first, finish last, usage chunk, same text as not streamed', async () => {
  const params = { model: 'stories', messages: [{ role: 'user', content: 'Hi' }],
                   max_tokens: 40, temperature: 0 };
  const whole = await client.chat.completions.create(params);
  const stream = await client.chat.completions.create({ ...params, stream: true,
    stream_options: { include_usage: true } });
  const chunks = [];
  for await (const c of stream) chunks.push(c);
  assert.equal(chunks[0].choices[0].delta.role, 'assistant');
  const usage = chunks.at(-1);
  assert.deepEqual(usage.choices, []);
  assert.equal(usage.usage.completion_tokens, whole.usage.completion_tokens);
  const fin = chunks.at(-2);
  assert.equal(fin.choices[0].finish_reason, whole.choices[0].finish_reason);
  const text = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
  assert.equal(text, whole.choices[0].message.content);
});

test('completions: 200 tokens streamed in far fewer frames, text equal to not streamed', async () => {
  const params = { model: 'stories', prompt: 'Once upon a time', max_tokens: 200, temperature: 0,
                   ignore_eos: true };
  const whole = await client.completions.create(params);
  assert.equal(whole.usage.completion_tokens, 200);
  const stream = await client.completions.create({ ...params, stream: true });
  let text = ''; let frames = 0;
  for await (const c of stream) {
    if (c.choices[0]?.text) { frames++; text += c.choices[0].text; }
  }
  assert.equal(text, whole.choices[0].text);
  console.log(`# 200 tokens in ${frames} content frames`);
  assert.ok(frames < 100, `${frames} frames`);
});

test('logprobs: one entry per token, coalescing off', async () => {
  const stream = await client.chat.completions.create({
    model: 'stories', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 12,
    temperature: 0, logprobs: true, top_logprobs: 2, stream: true, ignore_eos: true,
    stream_options: { include_usage: true },
  });
  let entries = 0; let frames = 0; let usage;
  for await (const c of stream) {
    if (c.usage) usage = c.usage;
    const lp = c.choices[0]?.logprobs?.content;
    if (lp) { entries += lp.length; frames++; }
  }
  assert.equal(entries, usage.completion_tokens);
  assert.equal(frames, usage.completion_tokens);
  const r = await client.chat.completions.create({
    model: 'stories', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 5,
    temperature: 0, logprobs: true, ignore_eos: true,
  });
  assert.equal(r.choices[0].logprobs.content.length, r.usage.completion_tokens);
});

test('errors come back as the client error classes', async () => {
  await assert.rejects(client.chat.completions.create({ model: 'stories',
    messages: [{ role: 'user', content: 'x' }], tools: [{ function: { name: 5 } }] }),
  (e) => e instanceof OpenAI.BadRequestError && e.param === 'tools[0].function.name' &&
    e.code === 'invalid_type');
  await assert.rejects(client.chat.completions.create({ model: 'stories',
    messages: [{ role: 'user', content: 'x' }], temperature: 7 }),
  (e) => e instanceof OpenAI.BadRequestError && e.param === 'temperature');
  await assert.rejects(client.completions.create({ model: 'stories',
    prompt: 'Once upon a time '.repeat(300) }),
  (e) => e instanceof OpenAI.BadRequestError && e.code === 'context_length_exceeded');
});

test('any model name is the served model', async () => {
  const r = await client.chat.completions.create({ model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'Hi' }], max_tokens: 3 });
  assert.equal(r.model, 'stories');
});

test('raw HTTP: SSE framing', async () => {
  const r = await fetch(`${base}/v1/chat/completions`, { method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'Hi' }], max_tokens: 8,
                           stream: true }) });
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type'), /^text\/event-stream/);
  const body = await r.text();
  assert.ok(body.endsWith('data: [DONE]\n\n'));
  for (const ev of body.split('\n\n').filter(Boolean)) assert.match(ev, /^data: /);
});

test('raw HTTP: malformed and oversize bodies', async () => {
  let r = await fetch(`${base}/v1/chat/completions`, { method: 'POST', body: '{"messages": [' });
  assert.equal(r.status, 400);
  assert.equal((await r.json()).error.code, 'invalid_json');
  r = await fetch(`${base}/v1/chat/completions`, { method: 'POST', body: 'x'.repeat(100000) });
  assert.equal(r.status, 413);
  assert.equal((await r.json()).error.code, 'request_too_large');
  assert.equal((await fetch(`${base}/health`)).status, 200);
});

test('raw HTTP: disconnect mid-stream cancels the generation', async () => {
  assert.ok(await waitIdle());
  const body = JSON.stringify({ prompt: 'Once upon a time', max_tokens: 480, ignore_eos: true,
                                stream: true });
  const port = Number(new URL(base).port);
  await new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => {
      s.write(`POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
              `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    });
    s.on('data', (d) => { if (String(d).includes('data: ')) { s.destroy(); resolve(); } });
  });
  assert.ok(await waitIdle(), 'still generating after the client left');
});

test('64 concurrent connections, 16 streaming: all answered, nothing left running', async () => {
  const jobs = [];
  for (let i = 0; i < 64; i++) {
    const stream = i % 4 === 0;
    jobs.push(fetch(`${base}/v1/completions`, { method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'Once upon a time', max_tokens: 12 + (i % 8),
                             temperature: 0, ignore_eos: true, stream }) })
      .then(async (r) => ({ status: r.status, body: await r.text(), stream })));
  }
  const results = await Promise.all(jobs);
  for (const r of results) {
    assert.equal(r.status, 200, r.body);
    if (r.stream) assert.ok(r.body.endsWith('data: [DONE]\n\n'));
  }
  assert.ok(await waitIdle());
});

test('llama-server /completion with its sampler names', async () => {
  const r = await fetch(`${base}/completion`, { method: 'POST', body: JSON.stringify({
    prompt: 'Once upon a time', n_predict: 10, temperature: 0.8, top_k: 40, top_p: 0.95,
    min_p: 0.05, repeat_penalty: 1.1, repeat_last_n: 64, seed: 7, cache_prompt: true,
    id_slot: -1, ignore_eos: true }) });
  assert.equal(r.status, 200);
  const j = await r.json();
  assert.equal(typeof j.content, 'string');
  assert.equal(j.tokens_predicted, 10);
  assert.equal(typeof j.timings.predicted_ms, 'number');
});
