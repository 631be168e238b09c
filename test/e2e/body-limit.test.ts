import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import { makeWorld, uniqueEmail } from '../support/factories';
import { fingerprint } from '../support/refused';
import { useTestStack } from '../support/use';

const stack = useTestStack({ worker: false, http: true });
const MiB = 1024 * 1024;

type Answer = { status: number; body: any; headers: Record<string, string | string[] | undefined> };

/** A POST over a real socket, its body written as given: with a stated length, or chunk by chunk. */
function post(path: string, key: string, chunks: Buffer[], opts: { chunked: boolean }): Promise<Answer> {
  const url = new URL(path, stack.baseUrl!);
  const length = chunks.reduce((n, c) => n + c.length, 0);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          ...(opts.chunked ? { 'transfer-encoding': 'chunked' } : { 'content-length': String(length) }),
        },
      },
      (res) => {
        const got: Buffer[] = [];
        res.on('data', (d: Buffer) => got.push(d));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body: JSON.parse(Buffer.concat(got).toString('utf8')),
            headers: res.headers,
          }),
        );
      },
    );
    // The server may answer and close before it has read everything: that is the point.
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE' && err.code !== 'ECONNRESET') reject(err);
    });
    for (const c of chunks) req.write(c);
    req.end();
  });
}

/** A trigger body padded with a metadata string to `size` bytes, split into 64 KiB chunks. */
function body(rewardId: string, size: number): Buffer[] {
  const head = JSON.stringify({ participantEmail: uniqueEmail(), rewardId, metadata: { pad: '' } });
  const pad = 'x'.repeat(Math.max(0, size - head.length));
  const text = head.replace('"pad":""', `"pad":"${pad}"`);
  const buf = Buffer.from(text);
  const chunks: Buffer[] = [];
  for (let i = 0; i < buf.length; i += 64 * 1024) chunks.push(buf.subarray(i, i + 64 * 1024));
  return chunks;
}

describe('the 1 MiB body limit over HTTP', () => {
  for (const chunked of [false, true]) {
    const how = chunked ? 'a chunked body' : 'a body with a stated length';
    it(`${how} over 1 MiB is a 400 that closes the connection and writes nothing`, async () => {
      const w = await makeWorld(stack.ctx);
      const before = await fingerprint(stack.ctx.db);
      const r = await post(
        `/v1/campaign/${w.campaign.id}/loyalty-action`,
        w.key,
        body(w.reward.id, MiB + 10),
        {
          chunked,
        },
      );
      expect(r.status).toBe(400);
      expect(r.body.code).toBe('VALIDATION_ERROR');
      expect(r.body.message).toMatch(/1 MiB/);
      expect(r.headers.connection).toBe('close');
      expect(await fingerprint(stack.ctx.db)).toEqual(before);
    });

    it(`${how} under the limit is read whole and validated as usual`, async () => {
      const w = await makeWorld(stack.ctx);
      // Well under 1 MiB but over the metadata limit: the whole body was read, then the schema refused it.
      const big = await post(
        `/v1/campaign/${w.campaign.id}/loyalty-action`,
        w.key,
        body(w.reward.id, 300_000),
        {
          chunked,
        },
      );
      expect(big.status).toBe(400);
      expect(big.body.code).toBe('VALIDATION_ERROR');
      expect(big.body.message).not.toMatch(/1 MiB/);
      const ok = await post(`/v1/campaign/${w.campaign.id}/loyalty-action`, w.key, body(w.reward.id, 200), {
        chunked,
      });
      expect(ok.status, JSON.stringify(ok.body)).toBe(200);
      expect(ok.body.action.status).toBe('QUEUED');
    });
  }
});
