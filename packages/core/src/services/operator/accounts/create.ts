import { accounts, type Plan, type RateLimitOverrides } from '@stampcard/db';
import { type Ctx, commitWrite } from '../../../context';
import { newId } from '../../../ids';
import { serializeAccount } from './serialize';

export type AccountInput = {
  name: string;
  plan: Plan;
  participantQuota?: number | null;
  rateLimits?: RateLimitOverrides | null;
};

export async function createAccount(ctx: Ctx, input: AccountInput) {
  const [row] = await commitWrite(ctx, () =>
    ctx.db
      .insert(accounts)
      .values({
        id: newId('account'),
        name: input.name,
        plan: input.plan,
        participantQuota: input.participantQuota ?? null,
        rateLimits: input.rateLimits ?? null,
        createdAt: ctx.clock.now(),
      })
      .returning(),
  );
  return serializeAccount(row!);
}
