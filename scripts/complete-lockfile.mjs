#!/usr/bin/env node
/**
 * Completes package-lock.json with the platform-specific optional packages (biome, turbo, msgpackr-extract
 * builds for other operating systems and CPUs) that `npm install` leaves out when the registry it talks to
 * serves only this machine's platform. Without them `npm ci` refuses the lockfile as out of sync. Each added
 * entry carries the os/cpu/libc read from the package name, so npm skips it on any other platform and
 * fetches it normally where it applies. Run after `npm install`: `node scripts/complete-lockfile.mjs`.
 * With `--check` it changes nothing and exits 1 when an entry is missing (CI runs it so).
 */
import { readFileSync, writeFileSync } from 'node:fs';

const file = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(file, 'utf8'));
const OS = [
  'darwin',
  'linux',
  'win32',
  'android',
  'freebsd',
  'openbsd',
  'netbsd',
  'sunos',
  'aix',
  'openharmony',
];
const CPU = ['x64', 'arm64', 'arm', 'ia32', 'ppc64', 's390x', 'riscv64', 'loong64', 'mips64el'];

function platformOf(name) {
  const parts = name.split('/').pop().split('-');
  const os = parts.find((p) => OS.includes(p)) ?? (parts.includes('windows') ? 'win32' : undefined);
  const cpu = parts.find((p) => CPU.includes(p)) ?? (parts.includes('64') ? 'x64' : undefined);
  if (!os || !cpu) return null;
  const platform = { os: [os], cpu: [cpu] };
  if (parts.includes('musl')) platform.libc = ['musl'];
  else if (os === 'linux' && name.includes('biome')) platform.libc = ['glibc'];
  return platform;
}

let added = 0;
for (const [path, pkg] of Object.entries(lock.packages)) {
  for (const [dep, spec] of Object.entries(pkg.optionalDependencies ?? {})) {
    const here = `${path ? `${path}/` : ''}node_modules/${dep}`;
    const hoisted = `node_modules/${dep}`;
    if (lock.packages[here] || lock.packages[hoisted]) continue;
    if (!/^\d+\.\d+\.\d+/.test(spec)) continue;
    const platform = platformOf(dep);
    if (!platform) continue;
    lock.packages[hoisted] = {
      version: spec,
      ...(pkg.dev ? { dev: true } : {}),
      optional: true,
      ...platform,
    };
    added += 1;
  }
}
lock.packages = Object.fromEntries(
  Object.entries(lock.packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))),
);
if (process.argv.includes('--check')) {
  if (added > 0) {
    console.error(
      `package-lock.json lacks ${added} other-platform optional packages: run node scripts/complete-lockfile.mjs`,
    );
    process.exit(1);
  }
  console.log('package-lock.json is complete for other platforms');
} else {
  writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
  console.log(`package-lock.json: ${added} platform entries added`);
}
