import { campaigns, type Role, users } from '@stampcard/db';
import { and, eq, inArray } from 'drizzle-orm';
import { type Ctx, commitWrite } from '../../../context';
import { validationError } from '../../../errors';
import { newId } from '../../../ids';
import { requireAccount } from '../lookup';

export type UserInput = { email: string; role: Role; campaignIds?: string[] };

export async function createUser(ctx: Ctx, accountId: string, input: UserInput) {
  await requireAccount(ctx, accountId);
  const campaignIds = [...new Set(input.campaignIds ?? [])];
  if (campaignIds.length > 0) {
    const owned = await ctx.db
      .select({ id: campaigns.id })
      .from(campaigns)
      .where(and(eq(campaigns.accountId, accountId), inArray(campaigns.id, campaignIds)));
    const missing = campaignIds.filter((id) => !owned.some((o) => o.id === id));
    if (missing.length > 0) {
      throw validationError(
        missing.map((id) => ({
          location: 'body',
          param: 'campaignIds',
          value: id,
          msg: 'no such campaign in this account',
        })),
      );
    }
  }
  const [row] = await commitWrite(ctx, () =>
    ctx.db
      .insert(users)
      .values({
        id: newId('user'),
        accountId,
        email: input.email.toLowerCase(),
        role: input.role,
        campaignIds,
        createdAt: ctx.clock.now(),
      })
      .onConflictDoNothing()
      .returning(),
  );
  if (!row) {
    throw validationError([
      {
        location: 'body',
        param: 'email',
        value: input.email,
        msg: 'a user with this email already exists in the account',
      },
    ]);
  }
  return {
    id: row.id,
    accountId: row.accountId,
    email: row.email,
    role: row.role,
    campaignIds: row.campaignIds,
    createdAt: row.createdAt.getTime(),
  };
}
