import { type Metadata, participants } from '@stampcard/db';
import { eq, type SQL, sql } from 'drizzle-orm';
import { type Ctx, unitOfWork } from '../../context';
import { type ValidationIssue, validationError } from '../../errors';
import type { EventData } from '../../event-schemas';
import { isUniqueViolation, pgError } from '../../pg-error';
import { emailKey } from '../../rules/fraud';
import { dueConversion } from '../../rules/points';
import { type CampaignRow, campaignRef, type ParticipantRow, serializeParticipant } from '../../serialize';
import { recordEvents } from '../events';
import { lockParticipant, normaliseEmail, participantNotFound } from './lookup';
import { convertPoints } from './points';

/** The contract's metadata limits (section 1), held by the stored metadata after every change. */
export const METADATA_LIMITS = { maxKeys: 100, maxBytes: 16 * 1024 } as const;

export type ParticipantPatch = {
  firstName?: string | null;
  lastName?: string | null;
  email?: string;
  notes?: string | null;
  /** Merged into the stored metadata, key by key; a `null` value deletes its key. */
  metadata?: Metadata;
  /** Numbers added to the stored ones (a key absent or null counts as 0), in SQL, by the one UPDATE. */
  metadataIncrement?: Record<string, number>;
};

/** A participant update's outcome: the participant as stored, and the loyalty actions its points became. */
export type ParticipantUpdated = {
  participant: ParticipantRow;
  /** Ids of the loyalty actions a points conversion recorded (QUEUED, handed to the worker), oldest first; usually none. */
  loyaltyActionIds: string[];
};

export type ParticipantField = EventData<'PARTICIPANT_UPDATED'>['changed'][number];

const issue = (param: string, value: unknown, msg: string): ValidationIssue => ({
  location: 'body',
  param,
  value,
  msg,
});

/**
 * The new metadata, computed by PostgreSQL from the row as the UPDATE finds it: merged keys set, `null` ones
 * deleted, increments added with numeric arithmetic (each sum stored as a double). No value read before the
 * statement takes part, so concurrent increments add up even without the row lock the caller also holds.
 */
function metadataExpression(merge: [string, Metadata[string]][], increments: [string, number][]): SQL {
  const stored = sql`coalesce(${participants.metadata}, '{}'::jsonb)`;
  const put = JSON.stringify(Object.fromEntries(merge.filter(([, v]) => v !== null)));
  const drop = JSON.stringify(merge.filter(([, v]) => v === null).map(([k]) => k));
  const add = JSON.stringify(Object.fromEntries(increments));
  return sql`((${stored} || ${put}::jsonb) - array(select jsonb_array_elements_text(${drop}::jsonb)))
    || coalesce((
      select jsonb_object_agg(i.key, case
        when jsonb_typeof(${stored} -> i.key) = 'number'
          then to_jsonb(((${stored} -> i.key)::numeric + i.value::numeric)::float8)
        when coalesce(jsonb_typeof(${stored} -> i.key), 'null') = 'null' then i.value
        else ${stored} -> i.key
      end)
      from jsonb_each(${add}::jsonb) as i(key, value)
    ), '{}'::jsonb)`;
}

/** Whether two metadata objects (as jsonb gives them back: keys in one canonical order) are equal. */
const sameMetadata = (a: Metadata | null, b: Metadata | null) =>
  JSON.stringify(a ?? {}) === JSON.stringify(b ?? {});

function changedFields(before: ParticipantRow, after: ParticipantRow): ParticipantField[] {
  const changed: ParticipantField[] = [];
  for (const f of ['firstName', 'lastName', 'email', 'notes'] as const) {
    if (before[f] !== after[f]) changed.push(f);
  }
  if (!sameMetadata(before.metadata, after.metadata)) changed.push('metadata');
  return changed;
}

/** The stored metadata after the change must still be within the contract's limits. */
function checkStoredMetadata(after: Metadata | null, increments: [string, number][]) {
  const m = after ?? {};
  const issues: ValidationIssue[] = [];
  for (const [key, by] of increments) {
    if (!Number.isFinite(m[key]))
      issues.push(issue(`metadataIncrement.${key}`, by, 'the sum is out of range'));
  }
  const keys = Object.keys(m).length;
  if (keys > METADATA_LIMITS.maxKeys) {
    issues.push(
      issue('metadata', null, `the metadata would have ${keys} keys: at most ${METADATA_LIMITS.maxKeys}`),
    );
  }
  const bytes = Buffer.byteLength(JSON.stringify(m));
  if (bytes > METADATA_LIMITS.maxBytes) {
    issues.push(
      issue(
        'metadata',
        null,
        `the metadata would be ${bytes} bytes as JSON: at most ${METADATA_LIMITS.maxBytes}`,
      ),
    );
  }
  if (issues.length > 0) throw validationError(issues);
}

/**
 * Changes a participant (API update): profile fields, `email` (normalised; one another participant of the
 * campaign has is a 400 naming `email`), `metadata` merged and `metadataIncrement` added in SQL. One
 * transaction: the participant's row is locked, an increment of a stored value that is not a number is
 * refused before anything is written, the UPDATE computes the new metadata, the campaign's points conversion
 * runs when the increment made its key reach the threshold (`convertPoints`: value decremented, loyalty
 * actions recorded), a result past the metadata limits rolls it all back (400), and `PARTICIPANT_UPDATED`
 * (naming the fields whose value changed; none when nothing did) commits with it. Once it committed, the
 * event and the conversion's actions are handed on (`ctx.afterCommit`), as every write's are. Answers the
 * participant as stored and the ids of those actions.
 */
export async function updateParticipant(
  ctx: Ctx,
  campaign: CampaignRow,
  idOrEmail: string,
  patch: ParticipantPatch,
): Promise<ParticipantUpdated> {
  const increments = Object.entries(patch.metadataIncrement ?? {});
  const given = Object.entries(patch).filter(([, v]) => v !== undefined);
  if (given.length === 0) {
    throw validationError([
      issue(
        '',
        null,
        'nothing to change: give firstName, lastName, email, notes, metadata or metadataIncrement',
      ),
    ]);
  }
  const inputIssues = increments.flatMap(([key, by]) => {
    if (patch.metadata && Object.hasOwn(patch.metadata, key)) {
      return [issue(`metadataIncrement.${key}`, by, 'is set by metadata too: give each key in one of them')];
    }
    return Number.isFinite(by) ? [] : [issue(`metadataIncrement.${key}`, by, 'must be a finite number')];
  });
  if (inputIssues.length > 0) throw validationError(inputIssues);

  return unitOfWork(ctx, async (tx): Promise<ParticipantUpdated> => {
    const before = await lockParticipant(tx, campaign.id, idOrEmail);
    const stored = before.metadata ?? {};
    const notNumbers = increments.filter(
      ([key]) => Object.hasOwn(stored, key) && stored[key] !== null && typeof stored[key] !== 'number',
    );
    if (notNumbers.length > 0) {
      throw validationError(
        notNumbers.map(([key]) =>
          issue(
            `metadataIncrement.${key}`,
            stored[key],
            'the stored value is not a number: it cannot be incremented',
          ),
        ),
      );
    }

    return changeParticipant(tx, campaign, before, patch);
  });
}

/**
 * The change itself, in the caller's unit of work on `before`, the participant's row as locked by the caller:
 * the UPDATE, the points conversion, the metadata limits (400 rolls it back) and `PARTICIPANT_UPDATED` naming
 * the fields whose value changed (none recorded when nothing did, or when `silent`: an import's, see
 * `runImportStep`). Shared by the API's update and an import's rows for participants that exist.
 */
export async function changeParticipant(
  tx: Ctx,
  campaign: CampaignRow,
  before: ParticipantRow,
  patch: ParticipantPatch,
  opts: { silent?: boolean } = {},
): Promise<ParticipantUpdated & { changed: ParticipantField[] }> {
  const { db } = tx;
  const now = tx.clock.now();
  const merge = Object.entries(patch.metadata ?? {});
  const increments = Object.entries(patch.metadataIncrement ?? {});
  const idOrEmail = before.id;
  let after: ParticipantRow | undefined;
  try {
    [after] = await db
      .update(participants)
      .set({
        ...(patch.firstName !== undefined ? { firstName: patch.firstName } : {}),
        ...(patch.lastName !== undefined ? { lastName: patch.lastName } : {}),
        ...(patch.email !== undefined
          ? { email: normaliseEmail(patch.email), emailKey: emailKey(patch.email) }
          : {}),
        ...(patch.notes !== undefined ? { notes: patch.notes } : {}),
        ...(merge.length > 0 || increments.length > 0
          ? { metadata: metadataExpression(merge, increments) }
          : {}),
        updatedAt: now,
      })
      .where(eq(participants.id, before.id))
      .returning();
  } catch (err) {
    if (isUniqueViolation(err, 'participants_campaign_email_uq')) {
      throw validationError([
        issue('email', patch.email, 'another participant of this campaign has this email'),
      ]);
    }
    if (pgError(err)?.code === '22003') {
      throw validationError([issue('metadataIncrement', null, 'a sum is out of range')]);
    }
    throw err;
  }
  if (!after) throw participantNotFound(campaign.id, idOrEmail);
  const conversion = dueConversion(
    campaign,
    increments.map(([key]) => key),
    after.metadata,
  );
  const converted = conversion ? await convertPoints(tx, campaign.id, after.id, conversion) : null;
  if (converted) after = { ...after, metadata: converted.metadata };
  checkStoredMetadata(after.metadata, increments);

  const changed = changedFields(before, after);
  if (changed.length > 0 && !opts.silent) {
    await recordEvents(tx, [
      {
        campaignId: campaign.id,
        type: 'PARTICIPANT_UPDATED',
        data: {
          participant: serializeParticipant(after, { now }),
          campaign: campaignRef(campaign),
          changed,
        },
      },
    ]);
  }
  return { participant: after, loyaltyActionIds: converted?.actionIds ?? [], changed };
}
