import { z } from '@hono/zod-openapi';
import { AUDIT_ENTITIES } from '@stampcard/db';
import { pageLimit } from '../../../lib/schemas';
import { AuditEntry } from '../../../lib/views';

const msTime = z.coerce.number().int().min(0).max(8_640_000_000_000_000);

/** The filters of an audit log's page, on the public and the operator API. */
export const auditLogQuery = {
  entity: z.enum(AUDIT_ENTITIES).optional(),
  entityId: z.string().min(1).max(64).optional().openapi({ description: 'The changed object’s id' }),
  actorId: z
    .string()
    .min(1)
    .max(64)
    .optional()
    .openapi({ description: "Who made the changes: an API key's id, a console session's, a portal link's" }),
  from: msTime.optional().openapi({ description: 'Changed at or after (UTC ms)' }),
  to: msTime.optional().openapi({ description: 'Changed before (UTC ms)' }),
  limit: pageLimit,
  nextId: z
    .string()
    .regex(/^\d{1,18}$/, { message: 'must be the nextId of a previous page' })
    .optional()
    .openapi({ description: 'The `nextId` of the previous page' }),
};

export const AuditPage = z
  .strictObject({
    entries: z.array(AuditEntry),
    limit: z.number().int(),
    nextId: z.string().nullable(),
    more: z.boolean(),
  })
  .openapi('AuditLogPage');

/** What both routes say of the log. */
export const AUDIT_TERMS =
  'Every change made through the public API, the portal, the console or the operator API, newest first: when (`at`, UTC ms), who (`actor`: `kind` `API_KEY`, `CONSOLE`, `PORTAL` or `OPERATOR`, its `id`, the API key’s or link’s `userId`, the `requestId`, and `via` for a change an import made), what (`entity`, `entityId`, `action` `CREATED`, `UPDATED` or `DELETED`) and the fields it changed as stored (`before`, `after`; all of them for a creation or a deletion; secrets never). Recorded in the change’s own transaction: a refused request leaves none. Loyalty actions are in their own ledger, not here; what the worker does on its own (applying actions, unlocking rewards) neither. A deleted participant’s personal data is scrubbed from its entries by its erasure. Kept for `AUDIT_RETENTION_DAYS` (365). Page with `nextId` while `more` is true; `limit` 1..100 (20), fewer when a page reaches its byte budget of 1 MiB.';
