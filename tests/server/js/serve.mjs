// Starts `hearth serve` on a free port for the node tests and waits until the model is loaded.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { startServer } from './start_server.mjs';

export { startServer };


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
