import { apiKeys } from '@stampcard/db';
import { and, eq, isNull } from 'drizzle-orm';
import { type Ctx, commitWrite } from '../../../context';
import { notFound } from '../../../errors';

export async function revokeApiKey(ctx: Ctx, keyId: string) {
  const [row] = await commitWrite(ctx, () =>
    ctx.db
      .update(apiKeys)
      .set({ revokedAt: ctx.clock.now() })
      .where(and(eq(apiKeys.id, keyId), isNull(apiKeys.revokedAt)))
      .returning({ id: apiKeys.id }),
  );
  if (!row) {
    const [exists] = await ctx.db
      .select({ id: apiKeys.id })
      .from(apiKeys)
      .where(eq(apiKeys.id, keyId))
      .limit(1);
    if (!exists) throw notFound(`API key ${keyId}`);
  }
  // Cached principals are keyed by the key's hash, which is not at hand: every process drops them all.
  await ctx.cache?.invalidate('principal');
  return { id: keyId, revoked: true };
}
