import { afterAll, beforeAll } from 'vitest';
import { createTestDb, type TestDb } from './db';
import { type FreezableProxy, freezableProxy } from './freezable-proxy';
import { deleteRedisKeys, REDIS_URL, uniquePrefix } from './redis-keys';
import { createTestStack, type TestStack, type TestStackOptions } from './stack';

/** An object that stands for one created in beforeAll: each property read goes to it. */
function lateBound<T extends object>(what: string, current: () => T | undefined): T {
  return new Proxy({} as T, {
    get(_target, prop) {
      const target = current();
      if (!target) throw new Error(`${what} is created in beforeAll: use it inside tests and hooks`);
      const value = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** The file's own database, created before its tests and dropped after them. */
export function useTestDb(): TestDb {
  let db: TestDb | undefined;
  beforeAll(async () => {
    db = await createTestDb();
  });
  afterAll(async () => {
    await db?.drop();
  });
  return lateBound('the test database', () => db);
}

/** The whole service on the file's own database and queue prefix, started before its tests, stopped after. */
export function useTestStack(opts: TestStackOptions = {}): TestStack {
  let db: TestDb | undefined;
  let stack: TestStack | undefined;
  beforeAll(async () => {
    db = await createTestDb();
    stack = await createTestStack(db, opts);
  });
  afterAll(async () => {
    await stack?.close();
    await db?.drop();
  });
  return lateBound('the test stack', () => stack);
}

/**
 * A queue prefix of the test file's own, for queues, workers or processes it starts itself (a test stack has
 * one already): every key under it is deleted when the file's tests end.
 */
export function usePrefix(name: string): string {
  const prefix = uniquePrefix(name);
  afterAll(async () => {
    await deleteRedisKeys(REDIS_URL, prefix);
  });
  return prefix;
}

/**
 * `useTestStack` whose every pool goes through a proxy in front of PostgreSQL that a test can freeze (a
 * store that stops answering on open connections); `db` is the file's own direct handle on the same
 * database. `prepare` runs on the new database before the service starts.
 */
export function useFreezableStack(
  opts: TestStackOptions & { prepare?: (db: TestDb) => Promise<void> } = {},
): {
  db: TestDb;
  proxy: FreezableProxy;
  stack: TestStack;
} {
  let db: TestDb | undefined;
  let proxy: FreezableProxy | undefined;
  let stack: TestStack | undefined;
  beforeAll(async () => {
    db = await createTestDb();
    await opts.prepare?.(db);
    proxy = await freezableProxy(5432);
    const proxied = new URL(db.url);
    proxied.port = String(proxy.port);
    stack = await createTestStack({ ...db, url: proxied.toString() }, opts);
  });
  afterAll(async () => {
    proxy?.thaw();
    await stack?.close();
    await proxy?.close();
    await db?.drop();
  });
  return {
    db: lateBound('the test database', () => db),
    proxy: lateBound('the proxy', () => proxy),
    stack: lateBound('the test stack', () => stack),
  };
}

/**
 * `useTestStack` on a store of the file's own (a Redis Cluster, a Sentinel, a pooler), started first: every role
 * runs, over HTTP, with the relay and the sweep, and `options` says how the stack reaches the store. After the
 * tests: the stack, then the store (a pooler holds connections to the database), then the database.
 */
export function useStackOn<S extends { stop(): Promise<void> }>(
  startStore: () => Promise<S>,
  options: (store: S, db: TestDb) => TestStackOptions,
): { stack: TestStack; store: S } {
  let store: S | undefined;
  let db: TestDb | undefined;
  let stack: TestStack | undefined;
  beforeAll(async () => {
    store = await startStore();
    db = await createTestDb();
    stack = await createTestStack(db, {
      http: true,
      dispatcher: true,
      sweep: true,
      relay: true,
      ...options(store, db),
    });
  }, 60_000);
  afterAll(async () => {
    await stack?.close();
    await store?.stop();
    await db?.drop();
  });
  return { stack: lateBound('the test stack', () => stack), store: lateBound('the store', () => store) };
}
