// Starts `hearth serve` on a free port for the node tests and waits until the model is loaded.
import { spawn } from 'node:child_process';

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
