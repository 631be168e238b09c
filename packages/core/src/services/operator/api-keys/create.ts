import { apiKeys, users } from '@stampcard/db';
import { eq } from 'drizzle-orm';
import { type Ctx, commitWrite } from '../../../context';
import { notFound } from '../../../errors';
import { newApiKey, newId } from '../../../ids';

/** Issues a key for a user. The key is in this answer only; the database keeps its hash. */
export async function createApiKey(ctx: Ctx, userId: string) {
  const [user] = await ctx.db.select({ id: users.id }).from(users).where(eq(users.id, userId)).limit(1);
  if (!user) throw notFound(`User ${userId}`);
  const { key, hash, prefix } = newApiKey();
  const [row] = await commitWrite(ctx, () =>
    ctx.db
      .insert(apiKeys)
      .values({ id: newId('apiKey'), userId, keyHash: hash, keyPrefix: prefix, createdAt: ctx.clock.now() })
      .returning(),
  );
  return { id: row!.id, userId, key, keyPrefix: prefix, createdAt: row!.createdAt.getTime() };
}
