import { integer, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';
import { campaigns } from './campaigns';

/**
 * Anti-fraud's IP throttle: new participants one address brought to a campaign in the current window (an
 * hour from the window's first), and until when the address is refused after passing the campaign's
 * `ipThrottle`. A creation counts itself in its own transaction, under this row's lock, so concurrent
 * creations from one address are counted exactly and a refused one counts nothing.
 */
export const ipThrottles = pgTable(
  'ip_throttles',
  {
    campaignId: text('campaign_id')
      .notNull()
      .references(() => campaigns.id, { onDelete: 'cascade' }),
    /** As the participant's `ipAddress` normalised (IPv4-mapped IPv6 as IPv4). */
    ipAddress: text('ip_address').notNull(),
    windowStart: timestamp('window_start', { withTimezone: true, mode: 'date' }).notNull(),
    count: integer('count').notNull(),
    blockedUntil: timestamp('blocked_until', { withTimezone: true, mode: 'date' }),
  },
  (t) => [primaryKey({ columns: [t.campaignId, t.ipAddress] })],
);
