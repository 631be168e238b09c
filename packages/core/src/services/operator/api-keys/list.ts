import { apiKeys, users } from '@stampcard/db';
import { and, eq, inArray, isNotNull, isNull, sql } from 'drizzle-orm';
import type { Ctx } from '../../../context';
import { requireAccount, requireUser } from '../lookup';
import { type OperatorPageQuery, pageById } from '../page';
import { serializeApiKey } from './serialize';

export type ApiKeyListQuery = OperatorPageQuery & {
  /** Keys of this account's users (404 when the account does not exist). */
  accountId?: string;
  /** Keys of this user (404 when the user does not exist). */
  userId?: string;
  /**
   * Keys whose `keyPrefix` starts with this: the first characters of a key, at most the 9 a `keyPrefix` holds
   * (letters, digits and `_`; the route refuses anything else, so no whole key travels in a URL).
   */
  keyPrefix?: string;
  /** true: only revoked keys; false: only keys in use. */
  revoked?: boolean;
};

/**
 * API keys, by id, cursor-paged (`pageById`), filtered: how an operator finds the key to revoke from what it
 * knows (the account, the user, the first characters of a key seen in a log or a leak). Never shows a key.
 */
export async function listApiKeys(ctx: Ctx, q: ApiKeyListQuery) {
  if (q.accountId !== undefined) await requireAccount(ctx, q.accountId);
  if (q.userId !== undefined) await requireUser(ctx, q.userId);
  const where = and(
    q.userId === undefined ? undefined : eq(apiKeys.userId, q.userId),
    q.accountId === undefined
      ? undefined
      : inArray(
          apiKeys.userId,
          ctx.db.select({ id: users.id }).from(users).where(eq(users.accountId, q.accountId)),
        ),
    q.keyPrefix === undefined ? undefined : startsWith(q.keyPrefix),
    q.revoked === undefined
      ? undefined
      : q.revoked
        ? isNotNull(apiKeys.revokedAt)
        : isNull(apiKeys.revokedAt),
  );
  return pageById(
    ctx,
    { table: apiKeys, where, key: 'apiKeys', serialize: (rows) => rows.map(serializeApiKey) },
    q,
  );
}

/**
 * `keyPrefix` starts with `prefix`, as a range of `api_keys_prefix_idx` (byte-wise): `~` sorts after every
 * character a key holds (letters, digits, `_`), so the range holds exactly the prefixes that start with it, and
 * needs no LIKE pattern (where `_` would be a wildcard).
 */
function startsWith(prefix: string) {
  const column = sql`${apiKeys.keyPrefix} collate "C"`;
  return sql`(${column} >= ${prefix} and ${column} < ${`${prefix}~`})`;
}
