import { apiKeys } from '@stampcard/db';
import { and, eq, isNull } from 'drizzle-orm';
import { type Ctx, commitWrite } from '../../../context';
import { requireApiKey } from '../lookup';

export async function revokeApiKey(ctx: Ctx, keyId: string) {
  const [row] = await commitWrite(ctx, (w) =>
    w.db
      .update(apiKeys)
      .set({ revokedAt: ctx.clock.now() })
      .where(and(eq(apiKeys.id, keyId), isNull(apiKeys.revokedAt)))
      .returning({ id: apiKeys.id }),
  );
  // None updated: an unknown key (404), or one revoked already (harmless).
  if (!row) await requireApiKey(ctx, keyId);
  // Cached principals are keyed by the key's hash, which is not at hand: every process drops them all.
  await ctx.cache?.invalidate('principal');
  return { id: keyId, revoked: true };
}
