// Precompresses the built text assets (gzip and brotli, at the highest levels, byte for byte
// the same on every run) so the server sends them with no work per request.
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

const dist = new URL('../dist/', import.meta.url).pathname;
const text = /\.(html|js|css|svg|json|txt)$/;
let jsGzip = 0;
function walk(dir) {
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) { walk(path); continue; }
    if (!text.test(name)) continue;
    const raw = readFileSync(path);
    const gz = gzipSync(raw, { level: 9 });
    const br = brotliCompressSync(raw, {
      params: {
        [constants.BROTLI_PARAM_QUALITY]: 11,
        [constants.BROTLI_PARAM_SIZE_HINT]: raw.length,
      },
    });
    writeFileSync(`${path}.gz`, gz);
    writeFileSync(`${path}.br`, br);
    if (name.endsWith('.js')) jsGzip += gz.length;
  }
}
walk(dist);
console.log(`dashboard JavaScript: ${(jsGzip / 1024).toFixed(1)} KB gzipped`);
