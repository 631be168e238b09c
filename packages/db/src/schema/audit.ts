import { bigserial, index, jsonb, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';

/** Who made a change: an API key of the account, a console session, a portal link, the operator API. */
export const AUDIT_ACTOR_KINDS = ['API_KEY', 'CONSOLE', 'PORTAL', 'OPERATOR'] as const;
export type AuditActorKind = (typeof AUDIT_ACTOR_KINDS)[number];
export const AUDIT_ACTIONS = ['CREATED', 'UPDATED', 'DELETED'] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];
/** What the audit log records changes of (one trigger each, migration 0022). */
export const AUDIT_ENTITIES = [
  'account',
  'user',
  'api_key',
  'campaign',
  'reward',
  'participant',
  'participant_reward',
  'form_submission',
  'webhook_endpoint',
  'participant_import',
] as const;
export type AuditEntity = (typeof AUDIT_ENTITIES)[number];

/**
 * The audit log: every change made through the public API, the portal, the console or the operator API, one row
 * each, written by a trigger on the changed table in the change's own transaction (`stampcard_audit()`,
 * migration 0022), from the actor the transaction names (`stampcard.actor`, set by core's `unitOfWork`). A
 * change no actor made (the worker applying actions, a dispatcher's bookkeeping) is not recorded: it follows
 * from one that was (the ledger, the events). `before` and `after` hold the columns that changed (all of them
 * for a creation or a deletion) as stored, secrets left out; a participant's personal data is scrubbed by its
 * erasure. Partitioned by month of `at` (migration 0023): a month past `AUDIT_RETENTION_DAYS` is dropped whole by
 * the worker.
 */
export const auditLog = pgTable(
  'audit_log',
  {
    id: bigserial('id', { mode: 'number' }).notNull(),
    at: timestamp('at', { withTimezone: true, mode: 'date' }).notNull(),
    accountId: text('account_id'),
    campaignId: text('campaign_id'),
    actorKind: text('actor_kind').$type<AuditActorKind>().notNull(),
    /** The API key's id, the console session's, the portal link's; null for the operator API. */
    actorId: text('actor_id'),
    /** The user the API key or portal link belongs to. */
    actorUserId: text('actor_user_id'),
    requestId: text('request_id'),
    /** What the change came through, beyond the request: a participant import's id. */
    via: text('via'),
    entity: text('entity').$type<AuditEntity>().notNull(),
    entityId: text('entity_id').notNull(),
    action: text('action').$type<AuditAction>().notNull(),
    before: jsonb('before').$type<Record<string, unknown>>(),
    after: jsonb('after').$type<Record<string, unknown>>(),
  },
  (t) => [
    // An account's log, newest first; an entity's history.
    index('audit_log_account_idx').on(t.accountId, t.id),
    index('audit_log_entity_idx').on(t.entity, t.entityId, t.id),
    primaryKey({ name: 'audit_log_pk', columns: [t.id, t.at] }),
  ],
);
