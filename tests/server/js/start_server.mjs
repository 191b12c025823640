// Starts `hearth serve` on a free port and waits until its model is loaded. No npm dependencies:
// shared by the node tests here, the web chat's (tests/webui) and the replicas' (tests/cluster).
import { spawn } from 'node:child_process';

export async function startServer(bin, args) {
  const proc = spawn(bin, ['serve', '--port', '0', ...args],
                     { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no listening line: ' + log)), 60000);
    proc.stderr.on('data', (d) => {
      log += d;
      const m = /listening on http:\/\/[^:]+:(\d+)/.exec(log);
      if (m) { clearTimeout(timer); resolve(Number(m[1])); }
    });
    proc.on('exit', (c) => reject(new Error(`hearth exited ${c}: ${log}`)));
  });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 1200; i++) {  // wait for the model
    const r = await fetch(`${base}/health`).catch(() => null);
    if (r && r.status === 200) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const stop = async () => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    proc.kill('SIGTERM');
    await new Promise((r) => proc.on('exit', r));
  };
  return { proc, base, port, stop };
}
