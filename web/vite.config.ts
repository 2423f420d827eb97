// The dashboard build: one entry, hashed names under /app/assets/, no inline script (the
// server's Content-Security-Policy forbids it), no module-preload polyfill (inline code).
import { defineConfig } from 'vite';

export default defineConfig({
  base: '/app/',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    sourcemap: false,
    reportCompressedSize: false,
  },
  server: { proxy: { '^/(?!app/).*': 'http://127.0.0.1:8080' } },
});
