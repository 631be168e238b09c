import { Socket } from 'node:net';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestDb, type TestDb } from '../../../test/support/db';
import { inOrder } from '../src/built-once';
import { createDb, type DbHandle } from '../src/client';

let testDb: TestDb;
let handle: DbHandle;
beforeAll(async () => {
  testDb = await createTestDb();
  handle = createDb(testDb.url, { max: 1 });
  await handle.db.execute(sql`create table in_order_cell (id int primary key, v int not null)`);
});
afterAll(async () => {
  await handle?.close();
  await testDb?.drop();
});

/** Three statements whose result tells the order they ran in: ((1 × 2) + 1) × 10 = 30, and no other order gives 30. */
const steps = [
  sql`insert into in_order_cell (id, v) values (${1}, ${1}) on conflict (id) do update set v = ${1}`,
  sql`update in_order_cell set v = v * ${2} where id = ${1}`,
  sql`update in_order_cell set v = v + ${1} where id = ${1}`,
  sql`update in_order_cell set v = v * ${10} where id = ${1}`,
];
const cell = async () =>
  (await handle.db.execute<{ v: number }>(sql`select v from in_order_cell where id = ${1}`))[0]?.v;

describe('inOrder: statements sent together, in the order given', () => {
  it('runs them in the order given, sent in one write on the transaction’s connection', async () => {
    // Warm: each text prepared once on the connection, so the run below is the steady state (Bind, Execute).
    await handle.db.transaction((tx) => inOrder(tx, steps));
    const write = vi.spyOn(Socket.prototype, 'write');
    try {
      await handle.db.transaction(async (tx) => {
        write.mockClear();
        await inOrder(tx, steps);
        // The four statements, one write: awaited one by one they are four.
        expect(write).toHaveBeenCalledTimes(1);
      });
    } finally {
      write.mockRestore();
    }
    expect(await cell()).toBe(30);
  });

  it('a failing statement rejects with its own error, the ones after it do not run, and nothing commits', async () => {
    await handle.db.execute(sql`update in_order_cell set v = ${7} where id = ${1}`);
    const failing = handle.db.transaction((tx) =>
      inOrder(tx, [steps[1]!, sql`update in_order_cell set v = v / ${0} where id = ${1}`, steps[3]!]),
    );
    await expect(failing).rejects.toThrow(/division by zero/);
    expect(await cell()).toBe(7);
  });

  it('refuses to run outside a transaction, where a pool could send them on several connections', async () => {
    await expect(inOrder(handle.db, steps)).rejects.toThrow(/must run in a transaction/);
  });
});
