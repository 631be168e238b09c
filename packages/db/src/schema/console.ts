import { index, pgTable, text, timestamp } from 'drizzle-orm/pg-core';

/**
 * Console sessions ended by signing out, each kept until it would have expired anyway: a copy of its cookie is
 * refused. In PostgreSQL, not Redis, so that the console (which reads PostgreSQL for everything else) keeps
 * answering while Redis is away.
 */
export const consoleSignOuts = pgTable(
  'console_sign_outs',
  {
    /** The session's random id (the cookie's). */
    sessionId: text('session_id').primaryKey(),
    expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [index('console_sign_outs_expires_idx').on(t.expiresAt)],
);
