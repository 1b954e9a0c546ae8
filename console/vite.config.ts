// Vite's build of the console: relative asset URLs (it is served under any
// stage's /console/), hashed file names (cached for good), no inline script
// or style (the page's Content-Security-Policy allows neither).
import { defineConfig } from 'vite';

export default defineConfig({
  base: './',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    sourcemap: false,
    target: 'es2022',
  },
});
