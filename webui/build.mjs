// Bundles the web chat for embedding: src/main.js (and its npm imports) into one minified ES
// module, the stylesheet and the page copied, and a gzip copy of each, into the folder given as
// the first argument (default dist/). Run by build.sh at build time; nothing is fetched at run time.
import * as esbuild from 'esbuild';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';

const here = path.dirname(new URL(import.meta.url).pathname);
const out = path.resolve(process.argv[2] || path.join(here, 'dist'));
fs.mkdirSync(out, { recursive: true });

await esbuild.build({
  entryPoints: [path.join(here, 'src', 'main.js')],
  bundle: true,
  format: 'esm',
  minify: true,
  target: ['chrome110', 'firefox115', 'safari16'],
  legalComments: 'none',
  outfile: path.join(out, 'app.js'),
  logLevel: 'warning',
});
await esbuild.build({
  entryPoints: [path.join(here, 'src', 'style.css')],
  bundle: true,
  minify: true,
  outfile: path.join(out, 'app.css'),
  logLevel: 'warning',
});
fs.copyFileSync(path.join(here, 'src', 'index.html'), path.join(out, 'index.html'));

let total = 0;
for (const name of ['index.html', 'app.js', 'app.css']) {
  const data = fs.readFileSync(path.join(out, name));
  const gz = zlib.gzipSync(data, { level: 9 });
  fs.writeFileSync(path.join(out, name + '.gz'), gz);
  total += gz.length;
  console.log(`webui: ${name} ${data.length} bytes, ${gz.length} gzip`);
}
console.log(`webui: page weight ${total} bytes gzip`);
