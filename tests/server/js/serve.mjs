// Starts `hearth serve` on a free port for the node tests and waits until the model is loaded.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';

export async function startServer(bin, args) {
  const proc = spawn(bin, ['serve', '--port', '0', ...args],
                     { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no listening line: ' + log)), 30000);
    proc.stderr.on('data', (d) => {
      log += d;
      const m = /listening on http:\/\/[^:]+:(\d+)/.exec(log);
      if (m) { clearTimeout(timer); resolve(Number(m[1])); }
    });
    proc.on('exit', (c) => reject(new Error(`hearth exited ${c}: ${log}`)));
  });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 600; i++) {  // wait for the model
    const r = await fetch(`${base}/health`).catch(() => null);
    if (r && r.status === 200) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return { proc, base };
}

// A random-weight model with the real Qwen3 vocabulary and chat template (`hearth synth`, in a
// fresh temporary folder) served by `hearth serve`, with an openai client for it. `stop()` ends
// the server and removes the folder.
export async function startSynthQwen3(bin, sharedModel, ctx) {
  const vocab = path.join(path.dirname(sharedModel), '..', 'tokenizers', 'vocab-qwen3.gguf');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-js-'));
  const model = path.join(dir, 'tiny-qwen3.gguf');
  execFileSync(bin, ['synth', '--preset', 'tiny-qwen3', '--vocab', vocab, '--type', 'Q8_0',
                     '-o', model], { stdio: 'ignore' });
  const { proc, base } = await startServer(bin, ['-m', model, '--ctx', String(ctx), '-t', '2']);
  const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'unused', maxRetries: 0 });
  const stop = async () => {
    proc.kill('SIGTERM');
    await new Promise((r) => proc.on('exit', r));
    fs.rmSync(dir, { recursive: true, force: true });
  };
  return { client, base, stop };
}
