import { apiKeys } from '@stampcard/db';
import { type Ctx, commitWrite } from '../../../context';
import { newApiKey, newId } from '../../../ids';
import { requireUser } from '../lookup';

/** Issues a key for a user. The key is in this answer only; the database keeps its hash. */
export async function createApiKey(ctx: Ctx, userId: string) {
  await requireUser(ctx, userId);
  const { key, hash, prefix } = newApiKey();
  const [row] = await commitWrite(ctx, (w) =>
    w.db
      .insert(apiKeys)
      .values({ id: newId('apiKey'), userId, keyHash: hash, keyPrefix: prefix, createdAt: ctx.clock.now() })
      .returning(),
  );
  return { id: row!.id, userId, key, keyPrefix: prefix, createdAt: row!.createdAt.getTime() };
}
