import { afterAll, beforeAll } from 'vitest';
import { createTestDb, type TestDb } from './db';
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
