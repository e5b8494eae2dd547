// Builds the dashboard into the server crate, where `include_dir!` embeds it. The output is
// committed; `ui/build.sh` rebuilds it and CI fails when the committed build differs.
import { defineConfig } from 'vite';
import { fileURLToPath } from 'node:url';

export default defineConfig({
  base: '/ui/',
  build: {
    outDir: fileURLToPath(new URL('../crates/muisti-server/ui', import.meta.url)),
    emptyOutDir: true,
    assetsDir: 'assets',
    sourcemap: false,
    modulePreload: { polyfill: false },
    chunkSizeWarningLimit: 1200,
  },
});
