import { accounts, type Plan, type RateLimitOverrides } from '@stampcard/db';
import { type Ctx, commitWrite } from '../../../context';
import { newId } from '../../../ids';
import { serializeAccount } from './serialize';

export type AccountInput = {
  name: string;
  plan: Plan;
  participantQuota?: number | null;
  rateLimits?: RateLimitOverrides | null;
  /** The origins that may frame the account's portal. @defaultValue [] */
  frameAncestors?: string[];
};

export async function createAccount(ctx: Ctx, input: AccountInput) {
  const [row] = await commitWrite(ctx, (w) =>
    w.db
      .insert(accounts)
      .values({
        id: newId('account'),
        name: input.name,
        plan: input.plan,
        participantQuota: input.participantQuota ?? null,
        rateLimits: input.rateLimits ?? null,
        frameAncestors: [...new Set(input.frameAncestors ?? [])],
        createdAt: ctx.clock.now(),
      })
      .returning(),
  );
  return serializeAccount(row!);
}
