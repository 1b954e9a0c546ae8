// The console's weight and load time, for `make bench`: the JavaScript it
// ships (raw and gzipped), and the time from navigation to its first
// screen (the sign-in button) in headless chromium, each run with an empty
// cache, served from console/dist by a local HTTP server.
//
// Usage: node e2e/load.mjs [runs]   (prints one line)

import { readFileSync, readdirSync } from 'node:fs';
import { createServer } from 'node:http';
import { extname, join } from 'node:path';
import { gzipSync } from 'node:zlib';

import { launch } from './browser.mjs';

const DIST = new URL('../dist/', import.meta.url).pathname;
const RUNS = Number(process.argv[2] || 10);
const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.json': 'application/json' };

const scripts = readdirSync(join(DIST, 'assets')).filter((f) => f.endsWith('.js'));
const raw = scripts.reduce((n, f) => n + readFileSync(join(DIST, 'assets', f)).length, 0);
const gzipped = scripts.reduce((n, f) => n + gzipSync(readFileSync(join(DIST, 'assets', f)), { level: 9 }).length, 0);

const server = createServer((req, res) => {
  const path = decodeURIComponent(new URL(req.url, 'http://x').pathname.replace(/^\/console\//, '/'));
  if (path === '/config.json') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ issuer: 'http://127.0.0.1:9/none', clientId: 'bench', scope: 'openid' }));
    return;
  }
  try {
    const body = readFileSync(join(DIST, path === '/' ? 'index.html' : path));
    res.writeHead(200, { 'content-type': TYPES[extname(path)] ?? 'text/html' });
    res.end(body);
  } catch {
    res.writeHead(404).end();
  }
});
await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
const url = `http://127.0.0.1:${server.address().port}/console/`;

const browser = await launch();
const times = [];
try {
  for (let i = 0; i < RUNS; i++) {
    const context = await browser.newContext();
    const page = await context.newPage();
    const start = performance.now();
    await page.goto(url);
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    times.push(performance.now() - start);
    await context.close();
  }
} finally {
  await browser.close();
  server.close();
}
times.sort((a, b) => a - b);
const kb = (n) => `${(n / 1000).toFixed(1)} KB`;
const median = Math.round(times[Math.floor(times.length / 2)]);
const worst = Math.round(times[times.length - 1]);
console.log(
  `admin console: ${scripts.length} script(s), ${kb(raw)} of JavaScript, ${kb(gzipped)} gzipped (budget 200 KB); ` +
    `first screen ${median} ms median, ${worst} ms worst of ${RUNS} empty-cache loads in headless chromium`,
);
