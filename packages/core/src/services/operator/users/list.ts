import { type Role, users } from '@stampcard/db';
import { and, eq } from 'drizzle-orm';
import type { Ctx } from '../../../context';
import { requireAccount } from '../lookup';
import { type OperatorPageQuery, pageById } from '../page';
import { serializeUser } from './serialize';

export type UserListQuery = OperatorPageQuery & {
  role?: Role;
  /** The user with this email (compared lower-cased, as stored). */
  email?: string;
};

/** An account's team members, by id, cursor-paged (`pageById`); 404 for an unknown account. */
export async function listUsers(ctx: Ctx, accountId: string, q: UserListQuery) {
  await requireAccount(ctx, accountId);
  const where = and(
    eq(users.accountId, accountId),
    q.role ? eq(users.role, q.role) : undefined,
    q.email ? eq(users.email, q.email.toLowerCase()) : undefined,
  );
  return pageById(
    ctx,
    { table: users, where, key: 'users', serialize: (rows) => rows.map(serializeUser) },
    q,
  );
}
