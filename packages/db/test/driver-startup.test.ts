import net from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createDb } from '../src/client';

const TCP = new URL(process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');

/**
 * What the server does to the first connection once the driver sends its array-types query (postgres.js sends
 * it first on every new connection): `reset`, the connection reset (a PostgreSQL restarting, a failover);
 * `terminate`, the FATAL 57P01 a terminated backend sends, then the end of the connection.
 */
type Fault = 'reset' | 'terminate';

/** A FATAL ErrorResponse, as PostgreSQL writes it: `E`, its length, then `S`, `V`, `C`, `M` fields. */
function fatal(code: string, message: string): Buffer {
  const fields = Buffer.concat([
    ...[
      ['S', 'FATAL'],
      ['V', 'FATAL'],
      ['C', code],
      ['M', message],
    ].map(([k, v]) => Buffer.from(`${k}${v}\0`)),
    Buffer.from([0]),
  ]);
  const head = Buffer.alloc(5);
  head.write('E', 0);
  head.writeInt32BE(fields.length + 4, 1);
  return Buffer.concat([head, fields]);
}

/** A TCP proxy in front of the real server that breaks the first connection at its array-types query. */
async function faultyProxy(fault: Fault) {
  let connections = 0;
  let broken = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const first = connections++ === 0;
    const upstream = net.connect(Number(TCP.port || 5432), TCP.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => s.destroy());
      s.on('close', () => {
        sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
    client.on('data', (chunk: Buffer) => {
      if (first && chunk.includes('pg_catalog.pg_type')) {
        broken += 1;
        upstream.destroy();
        if (fault === 'reset') client.resetAndDestroy();
        else client.end(fatal('57P01', 'terminating connection due to administrator command'));
        return;
      }
      upstream.write(chunk);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(TCP);
  url.hostname = '127.0.0.1';
  url.port = String((server.address() as net.AddressInfo).port);
  return {
    url: url.toString(),
    broken: () => broken,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * patches/postgres+3.4.9.patch, porsager/postgres#1192, #1205 and #1223: postgres.js starts every new connection
 * with a query of its own for the server's array types, and dropped the promise of it. When that connection
 * broke during the query, the rejection was unhandled, and a process that exits on one (every role of the
 * service) died: the dispatcher did so while PostgreSQL restarted. The error of a terminated backend also
 * stayed behind and failed the first query of the next connection.
 */
describe('a connection that breaks while the driver reads the array types', () => {
  const unhandled: unknown[] = [];
  const record = (reason: unknown) => void unhandled.push(reason);
  beforeEach(() => {
    unhandled.length = 0;
    process.on('unhandledRejection', record);
  });
  afterEach(() => {
    process.off('unhandledRejection', record);
  });

  for (const fault of ['reset', 'terminate'] as const) {
    it(`${fault}: no unhandled rejection, and no error of the broken connection reaches a query of the next`, async () => {
      const proxy = await faultyProxy(fault);
      const handle = createDb(proxy.url, { max: 1, reconnectMaxMs: 50 });
      try {
        const first = await handle.sql`select 1 as one`.then(
          () => 'answered',
          (err: { code?: string }) => err.code ?? 'no code',
        );
        expect(proxy.broken()).toBe(1);
        // The query waiting for the connection was never sent. A reset fails it (the caller is told, and may
        // try again); a connection the server ended is tried again by the driver, and the query runs on the next.
        expect(first).toBe(fault === 'reset' ? 'ECONNRESET' : 'answered');
        // The rejection of the driver's own query reaches no one: a turn of the event loop lets it surface.
        await new Promise((r) => setImmediate(r));
        expect(unhandled).toEqual([]);

        // A new connection, clean: no error of the old one replayed onto it, array types read.
        const [row] = await handle.sql<
          { one: number; ids: number[] }[]
        >`select 1 as one, ${[1, 2]}::int[] as ids`;
        expect(row).toEqual({ one: 1, ids: [1, 2] });
        await new Promise((r) => setImmediate(r));
        expect(unhandled).toEqual([]);
      } finally {
        await handle.close();
        await proxy.close();
      }
    });
  }
});
