import { type Role, users } from '@stampcard/db';
import { type Ctx, commitWrite } from '../../../context';
import { validationError } from '../../../errors';
import { newId } from '../../../ids';
import { requireAccount } from '../lookup';
import { campaignAccess } from './access';
import { serializeUser } from './serialize';

export type UserInput = { email: string; role: Role; campaignIds?: string[] };

export async function createUser(ctx: Ctx, accountId: string, input: UserInput) {
  await requireAccount(ctx, accountId);
  const campaignIds = await campaignAccess(ctx, accountId, input.campaignIds ?? []);
  const [row] = await commitWrite(ctx, (w) =>
    w.db
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
  return serializeUser(row);
}
