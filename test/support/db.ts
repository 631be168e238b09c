import { randomBytes } from 'node:crypto';
import { createDb, type DbHandle } from '@stampcard/db';
import postgres from 'postgres';
import { inject } from 'vitest';

export type TestDb = DbHandle & { url: string; drop(): Promise<void> };

/** A fresh, migrated database for one test file, cloned from the run's template. */
export async function createTestDb(): Promise<TestDb> {
  const template = inject('templateDatabase');
  const base = inject('baseDatabaseUrl');
  const name = `stampcard_t_${template.slice(-8)}_${randomBytes(4).toString('hex')}`;
  const admin = postgres(base, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database "${name}" template "${template}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(base);
  url.pathname = `/${name}`;
  const handle = createDb(url.toString(), { max: 10 });
  return {
    ...handle,
    url: url.toString(),
    drop: async () => {
      await handle.close();
      const sql = postgres(base, { max: 1, onnotice: () => {} });
      await sql.unsafe(`drop database if exists "${name}" with (force)`);
      await sql.end();
    },
  };
}

type Db = DbHandle['db'];
type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];

/**
 * A transaction that runs `work` and then stays open, holding the rows `work` locked, as another process's
 * transaction in the middle of its work would. Resolves once `work` has run; `release` commits it.
 */
export async function heldTransaction(db: Db, work: (tx: Tx) => Promise<unknown>) {
  let release!: () => void;
  const released = new Promise<void>((r) => {
    release = r;
  });
  let held!: () => void;
  let failed!: (err: unknown) => void;
  const isHeld = new Promise<void>((resolve, reject) => {
    held = resolve;
    failed = reject;
  });
  const done = db
    .transaction(async (tx) => {
      await work(tx);
      held();
      await released;
    })
    .catch((err: unknown) => {
      failed(err);
      throw err;
    });
  await isHeld;
  return {
    /** Commits the transaction, and waits for it to end. */
    release: async () => {
      release();
      await done;
    },
  };
}
