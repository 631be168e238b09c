import { createLogger } from '@stampcard/config';
import { createDb, type DbHandle } from '@stampcard/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectErrorShape } from '../../../test/support/client';
import { type FreezableProxy, freezableProxy } from '../../../test/support/freezable-proxy';
import { useTestStack } from '../../../test/support/use';
import { type RunningApi, startApi } from '../src/index';

const stack = useTestStack({ worker: false });
const logger = createLogger({ level: 'silent', name: 'ready-test' });

/**
 * The API's pool, counted: a real pool on the test's database whose `execute` (what `/ready` runs) is counted
 * on its way to PostgreSQL.
 */
function countedPool(url: string) {
  const handle = createDb(url, { max: 10 });
  let executes = 0;
  const db = new Proxy(handle.db, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (prop !== 'execute') return value;
      return (...args: unknown[]) => {
        executes += 1;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { handle, db, executes: () => executes };
}

let pools: DbHandle[] = [];
let apis: RunningApi[] = [];
let proxy: FreezableProxy | undefined;
beforeAll(() => {
  pools = [];
  apis = [];
});
afterAll(async () => {
  await Promise.all(apis.map((a) => a.close()));
  proxy?.thaw();
  await Promise.all(pools.map((p) => p.close()));
  await proxy?.close();
});

async function serve(db: DbHandle['db']) {
  const api = await startApi({ ...stack.deps, db, logger }, { port: 0, host: '127.0.0.1' });
  apis.push(api);
  return `http://127.0.0.1:${api.port}`;
}

const ready = async (base: string) => {
  const r = await fetch(`${base}/ready`);
  return { status: r.status, body: await r.json(), headers: r.headers };
};

describe('/ready', () => {
  it('200 callers at once share one check of PostgreSQL: a flood cannot take the API pool', async () => {
    const pool = countedPool(stack.dbUrl);
    pools.push(pool.handle);
    const base = await serve(pool.db);
    const answers = await Promise.all(Array.from({ length: 200 }, () => ready(base)));
    for (const a of answers) expect(a).toMatchObject({ status: 200, body: { status: 'ready' } });
    // One check in flight, shared by every caller, and reused while it is fresh: one query, two should a
    // second have passed meanwhile on a slow machine.
    expect(pool.executes()).toBeGreaterThanOrEqual(1);
    expect(pool.executes()).toBeLessThanOrEqual(2);
  });

  it('a PostgreSQL that stops answering makes it 503 at its own bound, with one check for every caller', async () => {
    const url = new URL(stack.dbUrl);
    proxy = await freezableProxy(Number(url.port || 5432), url.hostname);
    url.port = String(proxy.port);
    const pool = countedPool(url.toString());
    pools.push(pool.handle);
    const base = await serve(pool.db);
    // The connection is opened while the store still answers; then it goes silent.
    expect((await ready(base)).status).toBe(200);
    const before = pool.executes();
    proxy.freeze();
    // Past the cached answer's second, every caller of this wave shares one check, which times out.
    let answers: Awaited<ReturnType<typeof ready>>[] = [];
    // Waves until the cached 200 has expired (a fast machine sends many within its second), for 15 s at most.
    const giveUpAt = Date.now() + 15_000;
    while (Date.now() < giveUpAt && !answers.some((a) => a.status !== 200)) {
      answers = await Promise.all(Array.from({ length: 50 }, () => ready(base)));
      if (!answers.some((a) => a.status !== 200)) await new Promise((r) => setTimeout(r, 100));
    }
    const down = answers.filter((a) => a.status === 503);
    expect(down.length).toBeGreaterThan(0);
    for (const a of down) {
      const body = expectErrorShape(a, 503, 'UNAVAILABLE');
      expect(body.checks).toEqual({ postgres: 'down', redis: 'ok' });
    }
    expect(pool.executes() - before).toBeLessThanOrEqual(2);
    // /readyz shares the check: without PostgreSQL the API cannot serve, 503 with the same checks.
    const servable = await fetch(`${base}/readyz`);
    const refused = expectErrorShape(
      { status: servable.status, body: await servable.json(), headers: servable.headers },
      503,
      'UNAVAILABLE',
    );
    expect(refused.checks).toEqual({ postgres: 'down', redis: 'ok' });
    proxy.thaw();
  });
});
