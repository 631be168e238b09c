import { type AuditEntity, auditLog } from '@stampcard/db';
import { and, desc, eq, gte, lt, lte, type SQL } from 'drizzle-orm';
import type { Ctx } from '../../context';
import { itemsWithinBudget } from '../../paging';
import type { AuditEntryView } from '../../views';

export type AuditFilter = {
  /** The account's own entries only (the public API's; the operator may leave it out). */
  accountId?: string;
  entity?: AuditEntity;
  entityId?: string;
  /** An actor's id: an API key's, a console session's, a portal link's. */
  actorId?: string;
  /** UTC ms: entries at or after `from`, before `to`. */
  from?: number;
  to?: number;
  limit: number;
  /** The `nextId` of the previous page: entries older than it. */
  nextId?: string;
};

type Row = typeof auditLog.$inferSelect;

/** An entry as the API shows it. */
export function serializeAuditEntry(r: Row): AuditEntryView {
  return {
    id: String(r.id),
    at: r.at.getTime(),
    accountId: r.accountId,
    campaignId: r.campaignId,
    actor: {
      kind: r.actorKind,
      id: r.actorId,
      userId: r.actorUserId,
      requestId: r.requestId,
      via: r.via,
    },
    entity: r.entity,
    entityId: r.entityId,
    action: r.action,
    before: r.before,
    after: r.after,
  };
}

/**
 * The audit log, newest first, filtered, a page at a time: `nextId` carries on from the previous page (by the
 * entries' ids, so entries written meanwhile never shift a page). One index range per filter
 * (`audit_log_account_idx`, or `audit_log_entity_idx` for an entity's history); a page also ends before its JSON
 * passes the page budget.
 */
export async function listAuditLog(ctx: Ctx, f: AuditFilter) {
  const where: SQL[] = [];
  if (f.accountId) where.push(eq(auditLog.accountId, f.accountId));
  if (f.entity) where.push(eq(auditLog.entity, f.entity));
  if (f.entityId) where.push(eq(auditLog.entityId, f.entityId));
  if (f.actorId) where.push(eq(auditLog.actorId, f.actorId));
  if (f.from !== undefined) where.push(gte(auditLog.at, new Date(f.from)));
  if (f.to !== undefined) where.push(lt(auditLog.at, new Date(f.to)));
  if (f.nextId) where.push(lte(auditLog.id, Number(f.nextId)));
  const rows = await ctx.db
    .select()
    .from(auditLog)
    .where(and(...where))
    .orderBy(desc(auditLog.id))
    .limit(f.limit + 1);
  const items = rows.slice(0, f.limit).map(serializeAuditEntry);
  const shown = itemsWithinBudget(items);
  const page = items.slice(0, shown);
  const next =
    shown < items.length ? items[shown] : rows.length > f.limit ? serializeAuditEntry(rows[f.limit]!) : null;
  return { entries: page, limit: f.limit, nextId: next?.id ?? null, more: next !== null };
}

/** An entity's latest entries (the console's history of a participant, a campaign…), newest first. */
export async function entityHistory(ctx: Ctx, entity: AuditEntity, entityId: string, limit = 20) {
  const rows = await ctx.db
    .select()
    .from(auditLog)
    .where(and(eq(auditLog.entity, entity), eq(auditLog.entityId, entityId)))
    .orderBy(desc(auditLog.id))
    .limit(limit);
  return rows.map(serializeAuditEntry);
}
