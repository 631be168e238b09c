import { accounts, type Plan } from '@stampcard/db';
import { eq } from 'drizzle-orm';
import type { Ctx } from '../../../context';
import { type OperatorPageQuery, pageById } from '../page';
import { serializeAccount } from './serialize';

export type AccountListQuery = OperatorPageQuery & { plan?: Plan };

/** Every account, by id, cursor-paged (`pageById`); `plan` keeps the accounts on that plan. */
export async function listAccounts(ctx: Ctx, q: AccountListQuery) {
  const where = q.plan ? eq(accounts.plan, q.plan) : undefined;
  return pageById(
    ctx,
    { table: accounts, where, key: 'accounts', serialize: (rows) => rows.map(serializeAccount) },
    q,
  );
}
