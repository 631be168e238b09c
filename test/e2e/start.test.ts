import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { type AddressInfo, connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it, onTestFinished } from 'vitest';
import { client, operatorProgram } from '../support/client';
import {
  freePort,
  ROOT,
  type Run,
  startBuilt as start,
  startNpm,
  waitForOutput as waitFor,
} from '../support/processes';
import { startReceiver } from '../support/receiver';
import { deleteRedisKeys, REDIS_URL, uniquePrefix } from '../support/redis-keys';
import { useTestDb } from '../support/use';

const TOKEN = `op_${randomBytes(16).toString('hex')}`;

const db = useTestDb();
/** The environment of a service on `port` of 127.0.0.1, with its own queue prefix. */
const serviceEnv = (prefix: string, port: number) => ({
  DATABASE_URL: db.url,
  PORT: String(port),
  HOST: '127.0.0.1',
  OPERATOR_TOKEN: TOKEN,
  QUEUE_PREFIX: prefix,
});
/** npm start runs four processes: on a busy machine they take a while to be up (a bound, not an assertion). */
const STARTUP_MS = 60_000;
const NPM_START_TEST_MS = 150_000;

/** The file's modification time, once it exists. */
async function eventuallyStat(file: string, timeoutMs = 10_000): Promise<number> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const s = statSync(file, { throwIfNoEntry: false });
    if (s) return s.mtimeMs;
    if (Date.now() > end) throw new Error(`${file} never appeared`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('npm start', () => {
  it('names the missing service and how to start it, and exits 1', async () => {
    const run = start({ DATABASE_URL: 'postgres://postgres@127.0.0.1:1/stampcard', OPERATOR_TOKEN: TOKEN });
    expect(await run.exited).toBe(1);
    expect(run.output()).toContain('PostgreSQL is not reachable at 127.0.0.1:1');
    expect(run.output()).toContain('docker compose up -d postgres');
  });

  it('rejects an invalid environment with a message naming the variable', async () => {
    const run = start({ PORT: 'eighty', OPERATOR_TOKEN: TOKEN });
    expect(await run.exited).toBe(1);
    expect(run.output()).toMatch(/PORT/);
  });

  it(
    'migrates, serves (API, worker and dispatcher: an action becomes a signed webhook), and stops gracefully on SIGTERM',
    async () => {
      const receiver = await startReceiver();
      onTestFinished(() => receiver.close());
      const prefix = uniquePrefix('stampcard_start');
      let run: Run | undefined;
      onTestFinished(async () => {
        // A failed check leaves the service running: stop it before its keys go, or it writes them again.
        if (run?.child.exitCode === null) run.child.kill('SIGTERM');
        await run?.exited;
        await deleteRedisKeys(REDIS_URL, prefix);
      });
      run = start({
        DATABASE_URL: db.url,
        PORT: '0',
        HOST: '127.0.0.1',
        OPERATOR_TOKEN: TOKEN,
        QUEUE_PREFIX: prefix,
        WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
      });
      const [, port] = await waitFor(run, /"port":(\d+)/, STARTUP_MS);
      await waitFor(run, /webhook dispatcher and sweep running/, STARTUP_MS);
      const base = `http://127.0.0.1:${port}`;
      const http = (path: string, init: RequestInit) => fetch(`${base}${path}`, init);
      expect((await client(http).get('/health')).status).toBe(200);
      expect((await client(http).get('/ready')).body.status).toBe('ready');
      const op = client(http, TOKEN);
      const { key, campaignId, rewardId } = await operatorProgram(op);
      const endpoint = await op.post(`/admin/v1/campaigns/${campaignId}/webhook-endpoints`, {
        url: receiver.url,
        eventTypes: ['PARTICIPANT_REACHED_A_GOAL'],
      });
      expect(endpoint.status).toBe(200);
      const action = await client(http, key).post(`/v1/campaign/${campaignId}/loyalty-action`, {
        participantEmail: 'ada@example.com',
        rewardId: rewardId,
      });
      expect(action.status).toBe(200);
      const [delivery] = await receiver.waitFor(1);
      const goal = new Webhook(endpoint.body.secret).verify(
        delivery!.body,
        delivery!.headers as Record<string, string>,
      );
      expect(goal).toMatchObject({
        type: 'PARTICIPANT_REACHED_A_GOAL',
        data: { reward: { title: 'Free coffee' } },
      });
      run.child.kill('SIGTERM');
      expect(await run.exited).toBe(0);
      expect(run.output()).toContain('"msg":"stopped"');
    },
    NPM_START_TEST_MS,
  );

  it(
    "runs as the README's first command does: `npm start` builds, then serves from the build; Ctrl-C stops every role",
    async () => {
      const prefix = uniquePrefix('stampcard_npm');
      const port = await freePort();
      const run = startNpm(serviceEnv(prefix, port));
      onTestFinished(async () => {
        if (run.child.exitCode === null && run.child.signalCode === null) run.interrupt();
        await run.exited;
        await deleteRedisKeys(REDIS_URL, prefix);
      });
      await waitFor(run, /"msg":"every role running"/, STARTUP_MS);
      // turbo ran the build first (from its cache: the global setup built the same sources).
      expect(run.output()).toMatch(/Tasks:\s+\d+ successful, \d+ total/);
      const pids = [...run.output().matchAll(/"pid":(\d+),"msg":"\w+ process started"/g)].map((m) =>
        Number(m[1]),
      );
      expect(pids).toHaveLength(3);
      for (const pid of pids) {
        const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
        expect(command).toMatch(/dist\/start\.js\0/);
        expect(command).not.toContain('tsx');
      }
      const http = (path: string, init: RequestInit) => fetch(`http://127.0.0.1:${port}${path}`, init);
      expect((await client(http).get('/health')).status).toBe(200);
      run.interrupt();
      await run.exited;
      for (const role of ['api', 'worker', 'dispatcher'])
        expect(run.output()).toContain(`"role":"${role}","msg":"stopped"`);
      expect(run.output()).toMatch(/"name":"stampcard","msg":"stopped"/);
      for (const pid of pids) expect(existsSync(`/proc/${pid}`), `role process ${pid}`).toBe(false);
    },
    NPM_START_TEST_MS,
  );
});

describe('the build', () => {
  it('runs with plain node, loading no TypeScript and no tsx: the API role answers /health', async () => {
    const prefix = uniquePrefix('stampcard_built');
    const guard = pathToFileURL(join(ROOT, 'test/support/no-typescript.mjs')).href;
    const run = start(
      { DATABASE_URL: db.url, PORT: '0', HOST: '127.0.0.1', OPERATOR_TOKEN: TOKEN, QUEUE_PREFIX: prefix },
      ['--import', guard, 'dist/start.js', 'api'],
    );
    onTestFinished(async () => {
      if (run.child.exitCode === null) run.child.kill('SIGTERM');
      await run.exited;
      await deleteRedisKeys(REDIS_URL, prefix);
    });
    const [, port] = await waitFor(run, /"port":(\d+),"msg":"Stampcard API listening/, STARTUP_MS);
    const health = await fetch(`http://127.0.0.1:${port}/health`);
    expect(health.status).toBe(200);
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(0);
  });

  it('the guard above stops a process that loads TypeScript', async () => {
    const guard = pathToFileURL(join(ROOT, 'test/support/no-typescript.mjs')).href;
    const run = start({ DATABASE_URL: db.url, OPERATOR_TOKEN: TOKEN }, [
      '--import',
      'tsx',
      '--import',
      guard,
      'scripts/start.ts',
      'api',
    ]);
    expect(await run.exited).toBe(1);
    expect(run.output()).toMatch(/the build imported file:\/\/\S+\/scripts\/start\.ts/);
  });
});

/** True when something accepts a TCP connection on host:port. */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describe("npm start on a newcomer's machine", () => {
  it(
    "keeps the operator token it made across restarts (the file its owner's only), an OPERATOR_TOKEN set wins, and listens on 127.0.0.1 unless HOST says otherwise",
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'stampcard-start-'));
      const file = join(dir, '.stampcard', 'operator-token');
      const prefix = uniquePrefix('stampcard_token');
      const runs: Run[] = [];
      onTestFinished(async () => {
        for (const r of runs) if (r.child.exitCode === null) r.child.kill('SIGTERM');
        await Promise.all(runs.map((r) => r.exited));
        rmSync(dir, { recursive: true, force: true });
        await deleteRedisKeys(REDIS_URL, prefix);
      });
      const env = {
        DATABASE_URL: db.url,
        QUEUE_PREFIX: prefix,
        OPERATOR_TOKEN: '',
        OPERATOR_TOKEN_FILE: file,
      };
      const startOnce = async (extra: Record<string, string>, args?: string[]) => {
        const port = await freePort();
        const run = start({ ...env, PORT: String(port), HOST: '', ...extra }, args);
        runs.push(run);
        await waitFor(run, /Stampcard API listening/, STARTUP_MS);
        return { run, port };
      };
      const stop = async (run: Run) => {
        run.child.kill('SIGTERM');
        expect(await run.exited).toBe(0);
      };
      const queues = (port: number, token: string) =>
        fetch(`http://127.0.0.1:${port}/admin/v1/queues`, { headers: { authorization: `Bearer ${token}` } });

      const first = await startOnce({});
      const [, token] = await waitFor(
        first.run,
        /OPERATOR_TOKEN is not set; [^\n]*\n {2}(op_[0-9a-f]{48})\n/,
      );
      expect(first.run.output()).toContain(
        `kept in ${file} for every start (export OPERATOR_TOKEN=$(cat ${file}))`,
      );
      expect(readFileSync(file, 'utf8').trim()).toBe(token);
      expect(statSync(file).mode & 0o077).toBe(0);
      expect((await queues(first.port, token!)).status).toBe(200);
      // HOST unset: this machine only. 127.0.0.2 is loopback too, but not the address listened on.
      expect(await accepts('127.0.0.1', first.port)).toBe(true);
      expect(await accepts('127.0.0.2', first.port)).toBe(false);
      await stop(first.run);

      const second = await startOnce({});
      await waitFor(second.run, new RegExp(`\n {2}${token}\n`));
      expect((await queues(second.port, token!)).status).toBe(200);
      await stop(second.run);

      // A token in the environment wins: the kept one no longer opens the operator API, and nothing is printed.
      const own = `op_${randomBytes(16).toString('hex')}`;
      const third = await startOnce({ OPERATOR_TOKEN: own, HOST: '0.0.0.0' }, ['dist/start.js', 'api']);
      expect((await queues(third.port, own)).status).toBe(200);
      expect((await queues(third.port, token!)).status).toBe(403);
      expect(third.run.output()).not.toContain('OPERATOR_TOKEN is not set');
      expect(readFileSync(file, 'utf8').trim()).toBe(token);
      // HOST=0.0.0.0: every interface.
      expect(await accepts('127.0.0.2', third.port)).toBe(true);
      await stop(third.run);
    },
    NPM_START_TEST_MS,
  );
});

describe('first-run errors are one clear message', () => {
  it(
    'a port already in use is named, with how to pick another, and exit 1',
    async () => {
      const taken = createServer();
      await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
      onTestFinished(() => new Promise<void>((resolve) => taken.close(() => resolve())));
      const port = (taken.address() as AddressInfo).port;
      const run = start({
        DATABASE_URL: db.url,
        PORT: String(port),
        HOST: '127.0.0.1',
        OPERATOR_TOKEN: TOKEN,
      });
      expect(await run.exited).toBe(1);
      expect(run.output()).toContain(`Port ${port} on 127.0.0.1 is already in use`);
      expect(run.output()).toContain(`PORT=${port + 1} npm start`);
      expect(run.output()).not.toMatch(/^\s+at /m);
    },
    NPM_START_TEST_MS,
  );

  it('npm run db:migrate in production needs only DATABASE_URL', async () => {
    const env = { NODE_ENV: 'production', DATABASE_URL: db.url, OPERATOR_TOKEN: '' };
    const ok = start(env, ['packages/db/dist/migrate-cli.js']);
    expect(await ok.exited).toBe(0);
    expect(ok.output()).toContain('Migrations applied');
    const down = start({ ...env, DATABASE_URL: 'postgres://postgres@127.0.0.1:1/stampcard' }, [
      'packages/db/dist/migrate-cli.js',
    ]);
    expect(await down.exited).toBe(1);
    expect(down.output().trim()).toBe(
      'Migrations failed on 127.0.0.1:1/stampcard: ECONNREFUSED. Is PostgreSQL running, and DATABASE_URL right?',
    );
  });

  it.each([
    ['worker', /worker and relay running/],
    ['dispatcher', /webhook dispatcher and sweep running/],
  ])('a %s process keeps its heartbeat file fresh for the container healthcheck', async (role, running) => {
    const file = join(tmpdir(), `stampcard-heartbeat-${randomBytes(4).toString('hex')}`);
    const prefix = uniquePrefix('stampcard_hb');
    const run = start(
      { DATABASE_URL: db.url, QUEUE_PREFIX: prefix, HEARTBEAT_FILE: file, OPERATOR_TOKEN: TOKEN },
      ['dist/start.js', role],
    );
    onTestFinished(async () => {
      run.child.kill('SIGTERM');
      await run.exited;
      rmSync(file, { force: true });
      await deleteRedisKeys(REDIS_URL, prefix);
    });
    await waitFor(run, running);
    const first = await eventuallyStat(file);
    // Touched again on the next beat (every 5 s).
    const end = Date.now() + 8000;
    while (statSync(file).mtimeMs === first && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
    expect(statSync(file).mtimeMs).toBeGreaterThan(first);
  });
});

/** The pid of the latest process the supervisor started for `role`, from its log line. */
function latestPid(run: Run, role: string): number {
  const pids = [...run.output().matchAll(new RegExp(`"pid":(\\d+),"msg":"${role} process started"`, 'g'))];
  const pid = Number(pids.at(-1)?.[1]);
  expect(pid).toBeGreaterThan(0);
  return pid;
}

describe('no role stays dead', () => {
  it(
    'npm start restarts a role that died, after a backoff that doubles, and says so; the API answers again on its port',
    async () => {
      const prefix = uniquePrefix('stampcard_sup');
      const port = await freePort();
      const run = start(serviceEnv(prefix, port));
      onTestFinished(async () => {
        if (run.child.exitCode === null) run.child.kill('SIGTERM');
        await run.exited;
        await deleteRedisKeys(REDIS_URL, prefix);
      });
      await waitFor(run, /Stampcard API listening/, STARTUP_MS);
      await waitFor(run, /worker and relay running/, STARTUP_MS);
      await waitFor(run, /webhook dispatcher and sweep running/, STARTUP_MS);
      // The supervisor's own word: a role that dies before it has run once stops npm start instead.
      await waitFor(run, /"msg":"every role running"/, STARTUP_MS);
      const http = (path: string, init: RequestInit) => fetch(`http://127.0.0.1:${port}${path}`, init);

      process.kill(latestPid(run, 'api'), 'SIGKILL');
      await waitFor(
        run,
        /"code":null,"signal":"SIGKILL","restartInMs":1000,"deathsInARow":1,"msg":"api exited; restarting it in 1000 ms"/,
      );
      await waitFor(run, /"msg":"api restarted and running"/, STARTUP_MS);
      expect((await client(http).get('/health')).status).toBe(200);

      // Dying again at once waits twice as long.
      process.kill(latestPid(run, 'worker'), 'SIGKILL');
      await waitFor(run, /"msg":"worker restarted and running"/, STARTUP_MS);
      process.kill(latestPid(run, 'worker'), 'SIGKILL');
      await waitFor(
        run,
        /"restartInMs":2000,"deathsInARow":2,"msg":"worker exited; restarting it in 2000 ms"/,
      );
      await waitFor(
        run,
        /"msg":"worker restarted and running"[\s\S]*"msg":"worker restarted and running"/,
        STARTUP_MS,
      );

      // The restarted worker applies actions.
      const op = client(http, TOKEN);
      const { key, campaignId, rewardId } = await operatorProgram(op);
      const action = await client(http, key).post(`/v1/campaign/${campaignId}/loyalty-action?wait=true`, {
        participantEmail: 'ada@example.com',
        rewardId: rewardId,
      });
      expect(action.status).toBe(200);
      expect(action.body.action.status).toBe('APPLIED');
      expect(run.child.exitCode).toBeNull();

      run.child.kill('SIGTERM');
      expect(await run.exited).toBe(0);
      expect(run.output()).toContain('"msg":"stopped"');
    },
    NPM_START_TEST_MS,
  );

  it.each([
    ['exception', 'uncaughtException'],
    ['rejection', 'unhandledRejection'],
  ])(
    'a role process logs an uncaught %s (its class, never its message) and exits 1 for its supervisor',
    async (kind, origin) => {
      const prefix = uniquePrefix('stampcard_crash');
      const preload = `${pathToFileURL(join(ROOT, 'test/support/crash-on-signal.ts')).href}?${kind}`;
      // The preload is TypeScript (tsx loads it); the worker is the built JavaScript.
      const run = start({ DATABASE_URL: db.url, QUEUE_PREFIX: prefix, OPERATOR_TOKEN: TOKEN }, [
        '--import',
        'tsx',
        '--import',
        preload,
        'dist/start.js',
        'worker',
      ]);
      onTestFinished(async () => {
        if (run.child.exitCode === null) run.child.kill('SIGKILL');
        await run.exited;
        await deleteRedisKeys(REDIS_URL, prefix);
      });
      await waitFor(run, /worker and relay running/);
      run.child.kill('SIGUSR2');
      expect(await run.exited).toBe(1);
      const fatal = run
        .output()
        .split('\n')
        .find((line) => line.includes('uncaught error'));
      expect(JSON.parse(fatal!)).toMatchObject({
        level: 60,
        role: 'worker',
        origin,
        err: { type: 'TypeError' },
        msg: 'uncaught error: exiting, for the supervisor to restart this process',
      });
      expect(run.output()).not.toContain('sk_live_never_logged');
    },
  );
});
