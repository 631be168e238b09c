#!/usr/bin/env node
/**
 * Builds one workspace: `npm run build` at the root runs it in every workspace through turbo (dependencies
 * first, cached), as each workspace's own `build` script, `node ../../scripts/build-package.mjs`.
 *
 * The convention it reads, the same for every package under apps/ and packages/: package.json `exports` maps
 * each entry point to its source under the `@stampcard/source` condition (what vitest, tsc and tsx-run
 * processes resolve), and to its built files under `types` and `default` (what plain `node` resolves):
 *
 *   ".": { "@stampcard/source": "./src/index.ts", "types": "./dist/index.d.ts", "default": "./dist/index.js" }
 *
 * Each `src/<name>.ts` entry becomes `dist/<name>.js`: ESM for Node.js 20, bundled by esbuild with every
 * package import left external (dependencies and the other workspaces resolve at run time), with a source
 * map. When an entry names `types`, TypeScript's own `tsc` writes the declarations next to it (and the
 * `.d.ts` files under src/, hand-written or generated, are copied beside them); the other workspaces' types
 * resolve to their built `.d.ts`, hence the order. `tsc` does not do the JavaScript: the
 * sources import relative modules without a file extension (`./verify`), which it leaves as they are and
 * Node.js refuses. For the same reason the declarations' relative specifiers are rewritten to `./verify.js`,
 * which a `"moduleResolution": "nodenext"` consumer needs.
 *
 * With arguments (`node scripts/build-package.mjs scripts/start.ts`), the files named are the entries
 * instead, built into `dist/` of the current directory (the root's `npm start` script and its roles).
 */
import { execFileSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const SOURCE_CONDITION = '@stampcard/source';
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const cwd = process.cwd();
const pkg = JSON.parse(readFileSync(join(cwd, 'package.json'), 'utf8'));

/** @returns {{ name: string, source: string, types?: string, js: string }[]} */
function entriesFromExports() {
  const entries = [];
  for (const [subpath, target] of Object.entries(pkg.exports ?? {})) {
    const source = typeof target === 'object' ? target[SOURCE_CONDITION] : undefined;
    if (!source) fail(`exports["${subpath}"] has no "${SOURCE_CONDITION}" condition naming its source`);
    const name = source.match(/^\.\/src\/([\w-]+)\.ts$/)?.[1];
    if (!name) fail(`exports["${subpath}"]["${SOURCE_CONDITION}"] is ${source}, not ./src/<name>.ts`);
    const js = `./dist/${name}.js`;
    if (target.default !== js) fail(`exports["${subpath}"].default must be ${js} (the build of ${source})`);
    if (target.types !== undefined && target.types !== `./dist/${name}.d.ts`)
      fail(`exports["${subpath}"].types must be ./dist/${name}.d.ts`);
    entries.push({ name, source, types: target.types, js });
  }
  if (entries.length === 0) fail('package.json has no exports to build');
  return entries;
}

function fail(message) {
  console.error(`${pkg.name}: ${message}`);
  process.exit(1);
}

const args = process.argv.slice(2);
const entries =
  args.length > 0
    ? args.map((file) => ({
        name: basename(file, '.ts'),
        source: `./${file}`,
        js: `./dist/${basename(file, '.ts')}.js`,
      }))
    : entriesFromExports();
const outdir = join(cwd, 'dist');
rmSync(outdir, { recursive: true, force: true });

await build({
  absWorkingDir: cwd,
  entryPoints: Object.fromEntries(entries.map((e) => [e.name, e.source])),
  outdir,
  bundle: true,
  // Dependencies and the other workspaces stay imports, resolved by Node.js from node_modules at run time.
  packages: 'external',
  platform: 'node',
  format: 'esm',
  target: 'node20',
  // Entries of one package share their modules (and module state) through chunks beside them in dist/.
  splitting: true,
  sourcemap: true,
  // Class and function names stay what the source says: errors are logged and matched by class name.
  keepNames: true,
  logLevel: 'warning',
});

const declared = entries.filter((e) => e.types);
if (declared.length > 0) {
  const cacheDir = join(ROOT, 'node_modules/.cache/stampcard-build');
  mkdirSync(cacheDir, { recursive: true });
  const config = join(cacheDir, `${pkg.name.replace(/\W+/g, '_')}.tsconfig.json`);
  writeFileSync(
    config,
    JSON.stringify({
      extends: join(ROOT, 'tsconfig.json'),
      compilerOptions: {
        noEmit: false,
        declaration: true,
        emitDeclarationOnly: true,
        rootDir: join(cwd, 'src'),
        outDir: outdir,
        // The other workspaces as they are built (their dist/*.d.ts), not their sources.
        customConditions: [],
      },
      files: declared.map((e) => join(cwd, e.source)),
      include: [],
    }),
  );
  try {
    execFileSync(join(ROOT, 'node_modules/.bin/tsc'), ['-p', config], { stdio: 'inherit' });
  } catch {
    fail('tsc could not write the declarations (its errors are above)');
  }
  copyDeclarationSources(join(cwd, 'src'), outdir);
  rewriteDeclarationSpecifiers(outdir);
}

for (const e of entries) {
  for (const file of [e.js, e.types].filter(Boolean)) {
    if (!existsSync(join(cwd, file))) fail(`${file} was not written`);
  }
}

/** Declarations written by hand or generated (`src/schema.d.ts`), which tsc reads but does not emit. */
function copyDeclarationSources(src, out) {
  for (const entry of readdirSync(src, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.d.ts')) continue;
    const from = join(entry.parentPath, entry.name);
    const to = join(out, relative(src, from));
    mkdirSync(dirname(to), { recursive: true });
    copyFileSync(from, to);
  }
}

/** `./verify` → `./verify.js`, `./services` → `./services/index.js`, in every .d.ts under `dir`. */
function rewriteDeclarationSpecifiers(dir) {
  const specifier = /(\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(['"])(\.\.?(?:\/[^'"]*)?)\2/g;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.d.ts')) continue;
    const file = join(entry.parentPath, entry.name);
    const text = readFileSync(file, 'utf8');
    const rewritten = text.replace(specifier, (whole, lead, quote, spec) => {
      if (/\.(m|c)?js$|\.json$/.test(spec)) return whole;
      const target = resolve(dirname(file), spec);
      if (existsSync(`${target}.d.ts`)) return `${lead}${quote}${spec}.js${quote}`;
      if (existsSync(join(target, 'index.d.ts')))
        return `${lead}${quote}${spec.replace(/\/$/, '')}/index.js${quote}`;
      fail(`${file}: no declaration for ${spec}`);
    });
    if (rewritten !== text) writeFileSync(file, rewritten);
  }
}
