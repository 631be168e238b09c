import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach } from 'vitest';

export type Received = {
  headers: IncomingMessage['headers'];
  body: string;
  json: any;
  at: number;
  path: string;
};

/** How the receiver answers one request (the n-th it got, from 0): a status, headers, a body, a delay. */
export type Answer = {
  status?: number;
  headers?: Record<string, string>;
  body?: string;
  delayMs?: number;
  hang?: boolean;
};

/**
 * A real webhook receiver on a local port (`node:http`): it records every request and answers as `answer`
 * says (200 `ok` by default). `waitFor(n)` resolves once n requests have arrived.
 */
export async function startReceiver(answer: (req: Received, n: number) => Answer = () => ({})) {
  const received: Received[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  const open = new Set<ServerResponse>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let json: unknown = null;
      try {
        json = JSON.parse(body);
      } catch {}
      const r: Received = { headers: req.headers, body, json, at: Date.now(), path: req.url ?? '/' };
      const n = received.length;
      received.push(r);
      for (const w of waiters.filter((w) => received.length >= w.n)) w.resolve();
      const a = answer(r, n);
      if (a.hang) {
        open.add(res);
        return;
      }
      const reply = () => {
        res.writeHead(a.status ?? 200, a.headers ?? { 'content-type': 'text/plain' });
        res.end(a.body ?? 'ok');
      };
      if (a.delayMs) setTimeout(reply, a.delayMs);
      else reply();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    port,
    received,
    waitFor(n: number, timeoutMs = 10_000): Promise<Received[]> {
      if (received.length >= n) return Promise.resolve(received);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`receiver got ${received.length} of ${n} requests in ${timeoutMs} ms`)),
          timeoutMs,
        );
        waiters.push({
          n,
          resolve: () => {
            clearTimeout(timer);
            resolve(received);
          },
        });
      });
    },
    async close() {
      for (const res of open) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/**
 * `startReceiver` for a test file: each receiver a test starts is closed after that test.
 * Call it at the top of the file; it answers the function that starts them.
 */
export function useReceivers(): (...args: Parameters<typeof startReceiver>) => Promise<Receiver> {
  let receivers: Receiver[] = [];
  afterEach(async () => {
    await Promise.all(receivers.map((r) => r.close()));
    receivers = [];
  });
  return async (...args) => {
    const r = await startReceiver(...args);
    receivers.push(r);
    return r;
  };
}
