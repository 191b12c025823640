// Replicas behind HAProxy: 3 `hearth serve` on stories260K (a real trained tiny Llama, whose
// replies re-tokenize as they were generated, so a conversation that changes replica computes
// the same tokens), 12 conversations x 6 turns replayed through the load balancer. Reports, per setup,
// prompt tokens prefilled per new prompt token (1.0: every turn computes only its new text):
// round-robin without a shared folder (the baseline), affinity (deploy/haproxy/hearth.cfg) with
// a shared --cache-dir and one replica SIGKILLed mid-replay, and round-robin with the shared
// folder. Every reply must equal a single --no-cache server's.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { startServer } from '../server/js/start_server.mjs';

const bin = process.env.HEARTH_BIN;
const cfgTemplate = fs.readFileSync(path.join(process.env.HEARTH_ROOT, 'deploy', 'haproxy', 'hearth.cfg'), 'utf8');
const N_CONV = 12, N_TURN = 6, KILL_BEFORE_TURN = 3;
let dir, model;
const procs = new Set();

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function replica(args) {
  const r = await startServer(bin, ['-m', model, '-t', '1', ...args]);
  procs.add(r.proc);
  return r;
}

// 3 replicas (args each) and HAProxy (`balance` replaced by round-robin when asked).
async function cluster(args, roundRobin) {
  const replicas = [];
  for (let i = 0; i < 3; i++) replicas.push(await replica(args));
  let cfg = cfgTemplate;
  if (roundRobin) cfg = cfg.replace(/balance hash var\(txn\.key\)\n\s*hash-type consistent\n/, 'balance roundrobin\n');
  assert.equal(roundRobin, !cfg.includes('balance hash'));
  cfg += replicas.map((r, i) => `  server r${i + 1} 127.0.0.1:${r.port}\n`).join('');
  const cfgPath = path.join(dir, `haproxy-${Date.now()}.cfg`);
  fs.writeFileSync(cfgPath, cfg);
  const port = await freePort();
  const lb = spawn('haproxy', ['-f', cfgPath, '-db'], { stdio: 'ignore',
    env: { ...process.env, HEARTH_LB_ADDR: `127.0.0.1:${port}` } });
  procs.add(lb);
  const base = `http://127.0.0.1:${port}`;
  // Until HAProxy's first checks have passed on all three.
  for (let i = 0; i < 200; i++) {
    const r = await fetch(`${base}/health`).catch(() => null);
    if (r && r.ok) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  await new Promise((r) => setTimeout(r, 1500));
  return { base, replicas, lb };
}

async function stopAll() {
  for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGTERM');
  await Promise.all([...procs].map((p) => (p.exitCode !== null || p.signalCode !== null)
    ? null : new Promise((r) => p.on('exit', r))));
  procs.clear();
}

function conversationOpening(c) {
  return [{ role: 'system', content: `Lily and Tom play with toy ${c}. `.repeat(4) }];
}

async function chat(base, messages) {
  const res = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ messages, max_tokens: 12, temperature: 0 }),
  });
  assert.equal(res.status, 200, await res.clone().text());
  const j = await res.json();
  return { reply: j.choices[0].message.content, usage: j.usage,
           replica: res.headers.get('x-hearth-replica') };
}

// Replays the conversations turn by turn (all conversations' turn t, then t+1); onTurn(t) runs
// before turn t. Returns the replies, per-turn figures and the replica of each request.
async function replay(base, onTurn = async () => {}) {
  const convs = Array.from({ length: N_CONV }, (_, c) => conversationOpening(c));
  const out = { replies: [], prefilled: 0, fresh: 0, turns: [] };
  const prev = new Array(N_CONV).fill(null);
  for (let t = 0; t < N_TURN; t++) {
    await onTurn(t);
    const row = [];
    // A different order each turn (rotated by t), as users come and go: with round-robin a
    // conversation then lands on another replica than last turn.
    for (let i = 0; i < N_CONV; i++) {
      const c = (i + t) % N_CONV;
      convs[c].push({ role: 'user', content: `Then Tom said ${t} things about toy ${c}.` });
      const r = await chat(base, convs[c]);
      convs[c].push({ role: 'assistant', content: r.reply });
      const u = r.usage;
      const cached = u.prompt_tokens_details.cached_tokens;
      const fresh = prev[c] ? u.prompt_tokens - prev[c].prompt_tokens - prev[c].completion_tokens : u.prompt_tokens;
      out.prefilled += u.prompt_tokens - cached;
      out.fresh += Math.max(1, fresh);
      row[c] = { cached, prompt: u.prompt_tokens, replica: r.replica,
                 prefilled: u.prompt_tokens - cached, fresh: Math.max(1, fresh) };
      out.replies[t * N_CONV + c] = r.reply;
      prev[c] = u;
    }
    out.turns.push(row);
  }
  out.ratio = out.prefilled / out.fresh;
  return out;
}

before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-cluster-'));
  model = path.join(process.env.HEARTH_SHARED, 'models', 'stories260K.gguf');
});

after(async () => {
  await stopAll();
  fs.rmSync(dir, { recursive: true, force: true });
});

let reference;

test('a single --no-cache server gives the reference replies', async () => {
  const r = await replica(['--no-cache']);
  reference = await replay(`http://127.0.0.1:${r.port}`);
  await stopAll();
  assert.equal(reference.replies.length, N_CONV * N_TURN);
});

test('round-robin without a shared folder (the baseline)', async () => {
  const { base } = await cluster([], true);
  const r = await replay(base);
  await stopAll();
  console.log(`round-robin: ${r.prefilled} prompt tokens prefilled for ${r.fresh} new = ${r.ratio.toFixed(2)}`);
  assert.deepEqual(r.replies, reference.replies);
  assert.ok(r.ratio > 1.5, 'round-robin should recompute most of each conversation');
});

test('affinity with a shared folder, one replica killed mid-replay', async () => {
  const shared = path.join(dir, 'cache-affinity');
  const { base, replicas } = await cluster(['--cache-dir', shared, '--cache-shared'], false);
  let killed = null;
  const r = await replay(base, async (t) => {
    if (t !== KILL_BEFORE_TURN) return;
    killed = 'r1';
    replicas[0].proc.kill('SIGKILL');
  });
  await stopAll();
  // Until the kill, every conversation stays on one replica.
  for (let c = 0; c < N_CONV; c++) {
    const seen = new Set(r.turns.slice(0, KILL_BEFORE_TURN).map((row) => row[c].replica));
    assert.equal(seen.size, 1, `conversation ${c} moved between replicas: ${[...seen]}`);
  }
  const moved = [];
  for (let c = 0; c < N_CONV; c++)
    if (r.turns[KILL_BEFORE_TURN - 1][c].replica === killed) moved.push(c);
  assert.ok(moved.length > 0, 'the killed replica served some conversations');
  for (const c of moved) {
    const after = r.turns[KILL_BEFORE_TURN][c];
    assert.notEqual(after.replica, killed);
    assert.ok(after.cached > 0, `conversation ${c} resumed from the shared folder (cached ${after.cached})`);
  }
  const before = r.turns.slice(0, KILL_BEFORE_TURN).flat();
  const sum = (k) => before.reduce((n, x) => n + x[k], 0);
  const affinity = sum('prefilled') / sum('fresh');
  console.log(`affinity, turns before the kill: ${sum('prefilled')} prefilled for ${sum('fresh')} new = ${affinity.toFixed(2)}`);
  assert.ok(affinity <= 1.05, `affinity ratio ${affinity}`);
  console.log(`affinity (+ shared folder, SIGKILL before turn ${KILL_BEFORE_TURN}), all turns: ${r.prefilled} prefilled for ${r.fresh} new = ${r.ratio.toFixed(2)}; moved conversations ${moved.join(',')}: cached ${moved.map((c) => `${r.turns[KILL_BEFORE_TURN][c].cached}/${r.turns[KILL_BEFORE_TURN][c].prompt}`).join(' ')}`);
  const differ = r.replies.map((x, i) => (x === reference.replies[i] ? null : `turn ${Math.floor(i / N_CONV)} conversation ${i % N_CONV}`)).filter(Boolean);
  assert.deepEqual(differ, [], 'replies that differ from the single server\'s');
  assert.ok(r.ratio <= 1.05 + 0.25 * moved.length / N_CONV, `ratio ${r.ratio}`);
});

test('round-robin with the shared folder', async () => {
  const shared = path.join(dir, 'cache-rr');
  const { base } = await cluster(['--cache-dir', shared, '--cache-shared'], true);
  const r = await replay(base);
  await stopAll();
  console.log(`round-robin + shared folder: ${r.prefilled} prefilled for ${r.fresh} new = ${r.ratio.toFixed(2)}`);
  assert.ok(r.ratio <= 1.25, `ratio ${r.ratio}`);
  assert.deepEqual(r.replies, reference.replies);
});
