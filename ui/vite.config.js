// Builds the dashboard into the server crate, where `include_dir!` embeds it. The output is
// committed; `ui/build.sh` rebuilds it and CI fails when the committed build differs.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

// The bundle carries the code of the production dependencies: their licences and notices
// go with it, as assets/third-party-licenses.txt.
function licences() {
  return {
    name: 'third-party-licences',
    generateBundle() {
      const dirs = execFileSync('npm', ['ls', '--omit=dev', '--all', '--parseable'], { encoding: 'utf8' })
        .trim().split('\n').slice(1).sort();
      let out = 'Third-party code in this build (the npm packages bundled into assets/*.js).\n';
      for (const dir of dirs) {
        const pkg = JSON.parse(readFileSync(`${dir}/package.json`, 'utf8'));
        out += `\n==== ${pkg.name} ${pkg.version} (${pkg.license})\n`;
        const files = readdirSync(dir).filter((f) => /^(licen[cs]es?|notice|copyright)/i.test(f)).sort()
          .flatMap((f) => (statSync(`${dir}/${f}`).isDirectory()
            ? readdirSync(`${dir}/${f}`).sort().map((g) => `${f}/${g}`) : [f]));
        for (const f of files) out += `\n-- ${f}\n${readFileSync(`${dir}/${f}`, 'utf8').trim()}\n`;
      }
      this.emitFile({ type: 'asset', fileName: 'assets/third-party-licenses.txt', source: out });
    },
  };
}

export default defineConfig({
  base: '/ui/',
  plugins: [licences()],
  build: {
    outDir: fileURLToPath(new URL('../crates/muisti-server/ui', import.meta.url)),
    emptyOutDir: true,
    assetsDir: 'assets',
    sourcemap: false,
    modulePreload: { polyfill: false },
    chunkSizeWarningLimit: 1200,
  },
});
