import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * What a newcomer runs besides the code: the Dockerfile, docker-compose.yml and .env.example. No Docker
 * engine runs here, so their promises are checked as text (CI also validates the Compose file against the
 * Compose specification's schema with dclint, in `npm run lint`).
 */
const root = (path: string) => fileURLToPath(new URL(`../${path}`, import.meta.url));
const read = (path: string) => readFileSync(root(path), 'utf8');
const pkg = JSON.parse(read('package.json'));
const dockerfile = read('Dockerfile');
const compose = read('docker-compose.yml');

const workspaces = (pkg.workspaces as string[]).flatMap((glob) => {
  const dir = glob.replace(/\/\*$/, '');
  return readdirSync(root(dir))
    .map((name) => `${dir}/${name}`)
    .filter((path) => existsSync(root(`${path}/package.json`)));
});

/** The Dockerfile's stages: the manifests both installs start from, the build, then the image itself. */
const stages = dockerfile.split(/^(?=FROM )/m).filter((stage) => stage.startsWith('FROM '));
const [manifests, build, image] = stages as [string, string, string];
/** The two stages that install dependencies (every one, then the production ones). */
const installs = [build, image];

describe('the Docker image', () => {
  it('runs the Node.js major the project declares and types, and builds every stage on it', () => {
    const engines = (pkg.engines.node as string).match(/(\d+)/)?.[1];
    const types = (pkg.devDependencies['@types/node'] as string).match(/^(\d+)\./)?.[1];
    expect(stages).toHaveLength(3);
    const major = manifests.match(/^FROM node:(\d+)[-.]\S* AS manifests$/m)?.[1];
    expect(major).toBeDefined();
    expect(major).toBe(engines);
    expect(major).toBe(types);
    expect(build).toMatch(/^FROM manifests AS build$/m);
    expect(image).toMatch(/^FROM manifests$/m);
  });

  it('listens on every interface inside the container (npm start outside one: 127.0.0.1)', () => {
    expect(image).toMatch(/^ENV HOST=0\.0\.0\.0$/m);
  });

  it("copies every workspace's package.json before npm ci, so none is missing from the install", () => {
    expect(workspaces.length).toBeGreaterThan(4);
    for (const ws of workspaces) expect(manifests).toContain(`COPY ${ws}/package.json ${ws}/`);
    for (const stage of installs) expect(stage).toMatch(/^RUN npm ci /m);
  });

  it('builds in the build stage and ships only the build, production dependencies and the migrations', () => {
    expect(build).toMatch(
      /^RUN npm run build && .*cp -r --parents dist apps\/\*\/dist packages\/\*\/dist packages\/db\/drizzle /m,
    );
    expect(image).toMatch(/^RUN npm ci --omit=dev /m);
    // No sources, no TypeScript at run time: tsx is a development dependency only.
    expect(image.match(/^COPY .*/gm)).toEqual(['COPY --from=build /out ./']);
    expect(`${manifests}${image}`).not.toContain('tsx');
    expect(pkg.dependencies.tsx).toBeUndefined();
    expect(image).toMatch(/^CMD \["node", "dist\/start\.js", "all"\]$/m);
  });
});

describe('the PostgreSQL driver patch (patches/, packages/db/README.md)', () => {
  const patches = readdirSync(root('patches'));

  it('is applied at every install: a root postinstall that fails npm ci when a patch no longer applies', () => {
    expect(pkg.scripts.postinstall).toBe('patch-package --error-on-fail --error-on-warn');
    // Pinned exactly, and a runtime dependency: the image installs with --omit=dev.
    expect(pkg.dependencies['patch-package']).toMatch(/^\d+\.\d+\.\d+$/);
    const installed = JSON.parse(read('node_modules/postgres/package.json')).version;
    expect(patches).toContain(`postgres+${installed}.patch`);
  });

  it('is in the installed driver: nextWrite settles a closed connection instead of throwing', () => {
    for (const build of ['src', 'cjs/src', 'cf/src']) {
      const code = read(`node_modules/postgres/${build}/connection.js`);
      const nextWrite = code.slice(code.indexOf('function nextWrite('));
      expect(nextWrite, build).toMatch(
        /^function nextWrite\(fn\) \{\s+if \(socket === null\) \{[^}]*error\(Errors\.connection\('CONNECTION_CLOSED'/,
      );
      // Teardown forgets a buffered write and its timer, so the next connection can flush again.
      expect(
        code.match(/^ +clearImmediate\(nextWriteTimer\)\n\s+chunk = nextWriteTimer = null/gm),
        build,
      ).toHaveLength(2);
      // The driver's own array-types query of a new connection: its rejection is caught, and a close during
      // the connection's start forgets its error (porsager/postgres#1192, #1223).
      expect(code, build).toContain('return fetchArrayTypes().catch(noop)');
      expect(code, build).toMatch(
        /if \(initial\) \{[^}]*query = results = errorResponse = null[^}]*return reconnect\(\)/,
      );
    }
  });

  it('is applied in the image too (both installs), where dependencies install without their scripts', () => {
    expect(manifests).toContain('COPY patches ./patches');
    for (const stage of installs)
      expect(stage).toMatch(/^RUN npm ci .*--ignore-scripts && npm run postinstall/m);
  });
});

/** One service of docker-compose.yml, up to the next service (or the volumes). */
function serviceBlock(role: string): string {
  const at = compose.indexOf(`\n  ${role}:`);
  expect(at, role).toBeGreaterThan(0);
  const service = compose.slice(at);
  return service.slice(0, service.slice(1).search(/\n {2}\w[\w-]*:\n|\nvolumes:/) + 1);
}

describe('docker-compose.yml', () => {
  it('restarts every long-running service when it exits; only the one-shot migrate does not', () => {
    const services = compose.slice(compose.indexOf('\nservices:'), compose.indexOf('\nconfigs:'));
    const names = [...services.matchAll(/^ {2}(\w[\w-]*):\n/gm)].map((m) => m[1]!);
    expect(names).toEqual([
      'postgres',
      'redis',
      'migrate',
      'api',
      'worker',
      'dispatcher',
      'prometheus',
      'grafana',
    ]);
    // Prometheus and Grafana start only with the monitoring profile.
    for (const name of ['prometheus', 'grafana']) {
      const block = services.slice(services.indexOf(`\n  ${name}:\n`) + 1).split(/\n {2}\w[\w-]*:\n/)[0]!;
      expect(block, name).toMatch(/^ {4}profiles: \[monitoring\]$/m);
    }
    const anchor = compose.slice(compose.indexOf('x-app: &app'), compose.indexOf('\nservices:'));
    expect(anchor).toMatch(/^ {2}restart: unless-stopped$/m);
    for (const name of names) {
      const block = services.slice(services.indexOf(`\n  ${name}:\n`) + 1).split(/\n {2}\w[\w-]*:\n/)[0]!;
      const policy =
        block.match(/^ {4}restart: (.+)$/m)?.[1] ?? (block.includes('<<: *app') ? 'unless-stopped' : null);
      expect(policy, name).toBe(name === 'migrate' ? '"no"' : 'unless-stopped');
    }
  });

  it('publishes every port on 127.0.0.1 only', () => {
    const ports = [...compose.matchAll(/ports:\s*\[([^\]]*)\]/g)].flatMap((m) =>
      m[1]!.split(',').map((p) => p.trim().replace(/^"|"$/g, '')),
    );
    expect(ports.length).toBe(5);
    for (const p of ports) expect(p).toMatch(/^127\.0\.0\.1:/);
  });

  it('builds the image once', () => {
    expect(compose.match(/^\s+build:/gm)).toHaveLength(1);
  });

  it('needs no variable to be set for `docker compose up -d postgres redis`', () => {
    // `${VAR:?…}` makes Compose refuse every command, even ones that never use VAR.
    expect(compose).not.toMatch(/\$\{[A-Z_]+:?\?/);
  });

  it('gives every process a stop grace longer than its 30 s drain, and worker and dispatcher a healthcheck', () => {
    const grace = compose.match(/stop_grace_period:\s*(\d+)s/)?.[1];
    expect(Number(grace)).toBeGreaterThan(30);
    for (const role of ['worker', 'dispatcher']) {
      const block = serviceBlock(role);
      expect(block).toContain(`"--max-old-space-size=160", "dist/start.js", "${role}"`);
      expect(block).toMatch(/healthcheck:/);
      const file = block.match(/HEARTBEAT_FILE: (\S+)/)?.[1];
      expect(file, role).toBeDefined();
      expect(block).toContain(`statSync('${file}'`);
    }
  });

  it('passes WEBHOOK_ALLOW_PRIVATE_NETWORKS to the API (registration checks it) and the dispatcher (delivery)', () => {
    for (const role of ['api', 'dispatcher']) {
      const block = serviceBlock(role);
      expect(block, role).toMatch(/^\s+<<: \*app-env$/m);
      expect(block, role).toMatch(
        /^\s+WEBHOOK_ALLOW_PRIVATE_NETWORKS: \$\{WEBHOOK_ALLOW_PRIVATE_NETWORKS:-false\}$/m,
      );
    }
  });

  it('runs the built JavaScript with plain node: the migrations and every role', () => {
    expect(compose).toContain('command: ["node", "packages/db/dist/migrate-cli.js"]');
    expect(compose).toContain('command: ["node", "--max-old-space-size=160", "dist/start.js", "api"]');
    expect(compose).not.toContain('tsx');
  });

  it('sets a memory limit for Redis, without which noeviction does nothing', () => {
    expect(compose).toMatch(/"--maxmemory",\s*"[^"]+",\s*"--maxmemory-policy",\s*"noeviction"/);
  });

  it('every variable it reads is in .env.example', () => {
    const example = read('.env.example');
    const vars = new Set([...compose.matchAll(/\$\{([A-Z_]+)/g)].map((m) => m[1]!));
    expect(vars.size).toBeGreaterThan(3);
    for (const v of vars) expect(example).toMatch(new RegExp(`^${v}=`, 'm'));
  });
});
