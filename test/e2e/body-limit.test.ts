import { describe, expect, it } from 'vitest';
import { makeWorld, uniqueEmail } from '../support/factories';
import { paddedTriggerBody, rawPost } from '../support/raw-post';
import { fingerprint } from '../support/refused';
import { useTestStack } from '../support/use';

const stack = useTestStack({ worker: false, http: true });
const MiB = 1024 * 1024;

/** A POST of the API with this key, over a real socket. */
const post = (path: string, key: string, chunks: Buffer[], opts: { chunked: boolean }) =>
  rawPost(new URL(path, stack.baseUrl!), { authorization: `Bearer ${key}` }, chunks, opts);

/** A trigger body of `size` bytes, in 64 KiB chunks. */
const body = (rewardId: string, size: number) => paddedTriggerBody(uniqueEmail(), rewardId, size);

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
