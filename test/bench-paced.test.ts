import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { paced } from '../bench/load';

/**
 * The end-to-end figures' open loop against a local server that cannot keep up: it answers the requests whose
 * body's number is below 10 at once and never answers the others.
 */
describe("npm run bench's fixed-rate load", () => {
  let server: Server;
  let url: string;
  const held: ServerResponse[] = [];

  beforeAll(async () => {
    server = createServer((req: IncomingMessage, res: ServerResponse) => {
      let body = '';
      req.on('data', (chunk) => {
        body += chunk;
      });
      req.on('end', () => {
        const n = Number(JSON.parse(body).n);
        if (n < 10) res.end(JSON.stringify({ n }));
        else held.push(res);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    for (const res of held) res.destroy();
    await new Promise((resolve) => server.close(resolve));
  });

  it('counts what a service left unanswered with the time it waited, instead of failing the run', async () => {
    const answered: number[] = [];
    const result = await paced({
      urls: [url],
      rate: 200,
      durationS: 0.1,
      connections: 40,
      path: '/',
      headers: { 'content-type': 'application/json' },
      body: { text: '{"n":{n}}', modulo: 1 },
      drainMs: 300,
      onOk: (json) => answered.push(json.n),
    });
    expect(result.sent).toBe(20);
    expect(result.ok2xx).toBe(10);
    expect(answered.sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(result.unanswered).toBe(10);
    // Not failures of the transport: requests the server had not answered when the wait ended.
    expect(result.failed).toBe(0);
    // The unanswered requests waited at least the drain bound: they are the slowest, and the p99 says so.
    expect(result.latencyMs.p99!).toBeGreaterThanOrEqual(300);
    expect(result.latencyMs.p50!).toBeLessThan(300);
  });
});
