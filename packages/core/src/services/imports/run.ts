import {
  accounts,
  anyOf,
  campaigns,
  type ImportStatus,
  loyaltyActions,
  participantImportChunks,
  participantImportEmails,
  participantImportRefusals,
  participantImports,
  participants,
} from '@stampcard/db';
import { and, eq, sql } from 'drizzle-orm';
import { actAs, type Ctx, handOff, type ImportStep, unitOfWork } from '../../context';
import { DomainError } from '../../errors';
import { emailKey, type FraudCandidate } from '../../rules/fraud';
import {
  actionsToCarry,
  COUNT_COLUMN_PREFIX,
  IMPORT_MAX_CARRIED_COUNT,
  type ReadImportRow as ReadRow,
  type RowRefusal,
  readImportHeader,
  readImportRow,
} from '../../rules/imports';
import type { CampaignRow, ParticipantRow } from '../../serialize';
import { recordEvents } from '../events';
import { type QueuedActionInput, recordQueuedActions } from '../ledger';
import {
  countNewParticipants,
  newParticipantValues,
  participantAddedEvent,
  quotaExhausted,
} from '../participants/ensure';
import { blockAfterRefusal, countForThrottle, fraudLookups, judge } from '../participants/fraud';
import { lockParticipant, normaliseEmail } from '../participants/lookup';
import { changeParticipant, type ParticipantPatch } from '../participants/update';
import { fileFrom, readRecordsFrom } from './file';
import type { ParticipantImportRow as ImportRow } from './start';

/** Rows read per batch (one transaction), at most. */
export const IMPORT_BATCH_ROWS = 500;
/**
 * Carried-over loyalty actions per batch, at most: a batch ends after the row that reaches it (so one statement
 * records them, and the worker gets them in one hand-off).
 */
export const IMPORT_BATCH_ACTIONS = 4000;

export type ImportBatch = {
  /** False: the step was not the import's next one (its job ran twice, or the import ended): nothing done. */
  ran: boolean;
  status: ImportStatus | null;
  /** Rows this batch took. */
  rows: number;
  next: ImportStep | null;
};

type Refusal = { row: number; reason: string; message: string; cells: string[] };

/**
 * Runs one batch of an import, in one transaction with its row locked, so that a job run twice (or a batch
 * whose worker died before committing) does the work once:
 *
 * - batch 0 reads the whole file once, without storing anything, to count its rows (`rowsTotal`) and to find a
 *   CSV error before a single row is imported (the import FAILS, with the line, and nothing was changed);
 * - each next batch takes up to `IMPORT_BATCH_ROWS` rows from `byteOffset` (fewer once `IMPORT_BATCH_ACTIONS`
 *   carried-over actions are reached), each in a savepoint: read and held to the participant's bounds
 *   (`readImportRow`), refused as `DUPLICATE_ROW` when its email came earlier in the file, then created as an
 *   API add would be (anti-fraud, the lists, the IP throttle, the exact quota: source `IMPORT`) or, when the
 *   email is the campaign's already, changed as an API update would be; its carried-over counts become QUEUED
 *   loyalty actions, which the worker applies by the same rules as any (`actionsToCarry`). A refused row is
 *   kept with its reason and the rest go on. The cursor, the counts and the refusals commit with the rows.
 *
 * A `silent` import records no event for what it creates, changes or counts: no webhook is sent for it.
 */
export async function runImportStep(ctx: Ctx, step: ImportStep): Promise<ImportBatch> {
  for (let run = 1; ; run++) {
    try {
      return await unitOfWork(ctx, async (tx) => {
        const [imp] = await tx.db
          .select()
          .from(participantImports)
          .where(eq(participantImports.id, step.importId))
          .for('update');
        if (!imp || imp.batches !== step.batch || (imp.status !== 'QUEUED' && imp.status !== 'RUNNING'))
          return { ran: false, status: imp?.status ?? null, rows: 0, next: null };
        return step.batch === 0 ? countRows(tx, imp) : importRows(tx, imp);
      });
    } catch (err) {
      if (!(err instanceof QuotaRace) || run >= QUOTA_RACE_RUNS) throw err;
    }
  }
}

/** Batch 0: the counting pass. */
async function countRows(tx: Ctx, imp: ImportRow): Promise<ImportBatch> {
  const now = tx.clock.now();
  let total: number;
  try {
    ({ count: total } = await readRecordsFrom(
      fileFrom(tx, imp.id, imp.byteOffset),
      imp.byteOffset,
      Infinity,
      {
        keep: false,
      },
    ));
  } catch (err) {
    if (!(err instanceof Error) || !('code' in err) || !String(err.code).startsWith('CSV_')) throw err;
    await finish(tx, imp.id, 'FAILED', {
      error: `The file is not valid CSV: ${err.message.slice(0, 200)}`,
      startedAt: now,
    });
    return { ran: true, status: 'FAILED', rows: 0, next: null };
  }
  if (total === 0) {
    await finish(tx, imp.id, 'SUCCEEDED', { rowsTotal: 0, startedAt: now });
    return { ran: true, status: 'SUCCEEDED', rows: 0, next: null };
  }
  await tx.db
    .update(participantImports)
    .set({ status: 'RUNNING', rowsTotal: total, startedAt: now, touchedAt: now, batches: 1 })
    .where(eq(participantImports.id, imp.id));
  const next = { importId: imp.id, batch: 1 };
  await handOff(tx, { importSteps: [next] });
  return { ran: true, status: 'RUNNING', rows: 0, next };
}

/** Ends an import: its status, and its file and its emails deleted (its refusals stay, to download). */
async function finish(
  tx: Ctx,
  importId: string,
  status: 'SUCCEEDED' | 'FAILED',
  set: Partial<typeof participantImports.$inferInsert>,
) {
  const now = tx.clock.now();
  await tx.db
    .update(participantImports)
    .set({ ...set, status, finishedAt: now, touchedAt: now })
    .where(eq(participantImports.id, importId));
  await tx.db.delete(participantImportChunks).where(eq(participantImportChunks.importId, importId));
  await tx.db.delete(participantImportEmails).where(eq(participantImportEmails.importId, importId));
}

/** A batch's rows, read: their number in the file, their cells, where each ends in the file, and what they say. */
type BatchRow = { row: number; cells: string[]; end: number; read: ReadRow | RowRefusal };
/** A row to import: read, and the first of its email in the file. */
type ImportableRow = { row: number; cells: string[]; read: ReadRow };

/** Another batch made past the quota meanwhile (an API add): the batch is run again, from the same cursor. */
class QuotaRace extends Error {}

/** Most times a batch is run again after `QuotaRace` before its job is left to retry. */
const QUOTA_RACE_RUNS = 5;

/** A batch of rows (batch ≥ 1). */
async function importRows(tx: Ctx, imp: ImportRow): Promise<ImportBatch> {
  const [campaign] = await tx.db.select().from(campaigns).where(eq(campaigns.id, imp.campaignId));
  if (!campaign) return { ran: false, status: null, rows: 0, next: null };
  // Checked when the file was taken: the rewards it names are the campaign's (a count for one deleted since is
  // recorded, and the worker rejects its actions, REWARD_NOT_FOUND, as it would a trigger's).
  const named = new Set(
    imp.columns
      .filter((c) => c.startsWith(COUNT_COLUMN_PREFIX))
      .map((c) => c.slice(COUNT_COLUMN_PREFIX.length)),
  );
  const { columns } = readImportHeader(imp.columns, named);
  // The rows are changed by whoever started the import: the audit log records them as that actor's, through it.
  await actAs(tx.db, { kind: imp.actorKind, id: imp.actorId, accountId: imp.accountId, via: imp.id });
  const { records, done } = await readRecordsFrom(
    fileFrom(tx, imp.id, imp.byteOffset),
    imp.byteOffset,
    IMPORT_BATCH_ROWS,
  );
  // The batch ends before the row whose counts would take it past IMPORT_BATCH_ACTIONS (it takes one row at least).
  const rows: BatchRow[] = [];
  let carried = 0;
  for (const [i, r] of records.entries()) {
    const read = readImportRow(columns, r.cells, imp.format);
    const counts = 'reason' in read ? 0 : [...read.counts.values()].reduce((a, b) => a + b, 0);
    if (rows.length > 0 && carried + counts > IMPORT_BATCH_ACTIONS) break;
    carried += counts;
    rows.push({ row: imp.rowsDone + i + 1, cells: r.cells, end: r.end, read });
  }

  const refusals: Refusal[] = [];
  const refuse = (r: { row: number; cells: string[] }, reason: string, message: string) =>
    refusals.push({ row: r.row, reason, message: message.slice(0, 300), cells: r.cells });
  const firsts = await firstOccurrences(tx, imp.id, rows);
  const importable: ImportableRow[] = [];
  for (const r of rows) {
    if ('reason' in r.read) refuse(r, r.read.reason, r.read.message);
    else if (firsts.get(normaliseEmail(r.read.email)) !== r.row)
      refuse(r, 'DUPLICATE_ROW', `the email is on row ${firsts.get(normaliseEmail(r.read.email))} already`);
    else importable.push({ row: r.row, cells: r.cells, read: r.read });
  }

  const known = await participantsByEmail(
    tx,
    campaign.id,
    importable.map((r) => normaliseEmail(r.read.email)),
  );
  const created = await createParticipants(
    tx,
    campaign,
    imp,
    importable.filter((r) => !known.has(normaliseEmail(r.read.email))),
    refuse,
  );
  for (const [email, p] of created.existing) known.set(email, p);
  const changed = await changeParticipants(
    tx,
    campaign,
    imp,
    importable.filter((r) => known.has(normaliseEmail(r.read.email))),
    known,
    refuse,
  );
  const all = new Map([...known, ...created.participants]);
  const actions = await carryCounts(tx, imp, importable, all, created.participants);
  await recordQueuedActions(tx, actions.inputs);
  if (refusals.length > 0) {
    await tx.db
      .insert(participantImportRefusals)
      .values(refusals.map((f) => ({ importId: imp.id, ...f })))
      .onConflictDoNothing();
  }
  const refused = new Set(refusals.map((f) => f.row));
  const tally = { created: 0, updated: 0, unchanged: 0 };
  for (const r of importable) {
    const p = all.get(normaliseEmail(r.read.email));
    if (refused.has(r.row) || !p) continue;
    if (created.ids.has(p.id)) tally.created += 1;
    else if (changed.updated.has(p.id) || actions.participants.has(p.id)) tally.updated += 1;
    else tally.unchanged += 1;
  }
  const taken = rows.length;
  const counts = {
    rowsDone: imp.rowsDone + taken,
    createdCount: imp.createdCount + tally.created,
    updatedCount: imp.updatedCount + tally.updated,
    unchangedCount: imp.unchangedCount + tally.unchanged,
    refusedCount: imp.refusedCount + refusals.length,
    actionCount: imp.actionCount + actions.inputs.length,
    byteOffset: taken > 0 ? rows[taken - 1]!.end : imp.byteOffset,
    batches: imp.batches + 1,
  };
  if (done && taken === records.length) {
    await finish(tx, imp.id, 'SUCCEEDED', counts);
    return { ran: true, status: 'SUCCEEDED', rows: taken, next: null };
  }
  await tx.db
    .update(participantImports)
    .set({ ...counts, touchedAt: tx.clock.now() })
    .where(eq(participantImports.id, imp.id));
  const next = { importId: imp.id, batch: imp.batches + 1 };
  await handOff(tx, { importSteps: [next] });
  return { ran: true, status: 'RUNNING', rows: taken, next };
}

/**
 * The row number of each email's first row in the file (normalised as participants' are), this batch's rows
 * recorded in `participant_import_emails` in one statement: a row whose email has another number is a
 * duplicate. Emails of earlier batches are found there, so a resumed import sees them too.
 */
async function firstOccurrences(tx: Ctx, importId: string, rows: BatchRow[]): Promise<Map<string, number>> {
  const firsts = new Map<string, number>();
  for (const r of rows) {
    if ('reason' in r.read) continue;
    const email = normaliseEmail(r.read.email);
    if (!firsts.has(email)) firsts.set(email, r.row);
  }
  if (firsts.size === 0) return firsts;
  const entries = [...firsts].map(([email, row]) => ({ email, row }));
  const earlier = await tx.db.execute<{ email: string; row: number }>(sql`
    with mine as (
      select * from jsonb_to_recordset(${JSON.stringify(entries)}::jsonb) as v(email text, row integer)
    ), taken as (
      insert into ${participantImportEmails} (import_id, email, row)
      select ${importId}, email, row from mine
      on conflict (import_id, email) do nothing
      returning email
    )
    select e.email, e.row from ${participantImportEmails} e
    where e.import_id = ${importId} and e.email in (select email from mine)
      and e.email not in (select email from taken)`);
  for (const e of earlier) firsts.set(e.email, e.row);
  return firsts;
}

/** The campaign's participants with these (normalised) emails, in one statement. */
async function participantsByEmail(
  tx: Ctx,
  campaignId: string,
  emails: string[],
): Promise<Map<string, ParticipantRow>> {
  if (emails.length === 0) return new Map();
  const rows = await tx.db
    .select()
    .from(participants)
    .where(and(eq(participants.campaignId, campaignId), anyOf(participants.email, emails)));
  return new Map(rows.map((p) => [p.email, p]));
}

const subjectOf = (r: ReadRow) => ({
  email: r.email,
  firstName: r.fields.firstName ?? null,
  lastName: r.fields.lastName ?? null,
  ipAddress: r.fields.ipAddress ?? null,
  fingerprint: r.fields.fingerprint ?? null,
  notes: r.fields.notes ?? null,
  metadata: r.metadata,
});

/**
 * Creates the batch's new participants as an add would, a few statements for the whole batch: one look-up for
 * anti-fraud (`fraudLookups`), each row judged in file order against the campaign's participants and the
 * batch's earlier ones (`judge`), the IP throttle counted for a row with an address (in a savepoint, as an add
 * counts it), the quota's remainder given out in file order, then one INSERT, NEW_PARTICIPANT_ADDED for each
 * (unless `silent`), and the counters moved once (`countNewParticipants`): another writer that took the
 * remainder meanwhile makes the batch run again (`QuotaRace`), so the quota stays exact.
 */
async function createParticipants(
  tx: Ctx,
  campaign: CampaignRow,
  imp: ImportRow,
  rows: ImportableRow[],
  refuse: (r: ImportableRow, reason: string, message: string) => void,
): Promise<{
  participants: Map<string, ParticipantRow>;
  ids: Set<string>;
  existing: Map<string, ParticipantRow>;
}> {
  const made = {
    participants: new Map<string, ParticipantRow>(),
    ids: new Set<string>(),
    existing: new Map<string, ParticipantRow>(),
  };
  if (rows.length === 0) return made;
  const now = tx.clock.now();
  const lookups = await fraudLookups(
    tx,
    campaign,
    rows.map((r) => subjectOf(r.read)),
  );
  const [account] = await tx.db
    .select({ quota: accounts.participantQuota, count: accounts.participantCount })
    .from(accounts)
    .where(eq(accounts.id, campaign.accountId));
  let left = account?.quota == null ? Number.POSITIVE_INFINITY : account.quota - account.count;
  const batch: FraudCandidate[] = [];
  const values: (typeof participants.$inferInsert)[] = [];
  for (const [i, r] of rows.entries()) {
    const subject = subjectOf(r.read);
    const key = emailKey(subject.email);
    const lookup = lookups[i]!;
    const others = [
      ...lookup.others,
      ...batch.filter(
        (b) => b.emailKey === key || (subject.fingerprint && b.fingerprint === subject.fingerprint),
      ),
    ];
    let verdict: ReturnType<typeof judge>;
    try {
      verdict = judge(campaign, subject, { ...lookup, others }, now);
      if (left <= 0) throw quotaExhausted();
      if (verdict.throttled && subject.ipAddress) {
        const ip = subject.ipAddress;
        await blockAfterRefusal(tx, () =>
          tx.db.transaction((db) => countForThrottle({ ...tx, db }, campaign, ip)),
        );
      }
    } catch (err) {
      if (err instanceof DomainError && (err.code === 'PARTICIPANT_BLOCKED' || err.code === 'USAGE_LIMIT')) {
        refuse(r, err.code, err.message);
        continue;
      }
      throw err;
    }
    left -= 1;
    const row = newParticipantValues(campaign, subject, 'IMPORT', verdict, now);
    values.push(row);
    batch.push({
      id: row.id,
      emailKey: row.emailKey ?? null,
      firstName: row.firstName ?? null,
      lastName: row.lastName ?? null,
      ipAddress: row.ipAddress ?? null,
      fingerprint: row.fingerprint ?? null,
    });
  }
  if (values.length === 0) return made;
  const inserted = await tx.db
    .insert(participants)
    .values(values)
    .onConflictDoNothing({ target: [participants.campaignId, participants.email] })
    .returning();
  for (const p of inserted) {
    made.participants.set(p.email, p);
    made.ids.add(p.id);
  }
  // Made by another writer since the look-up: the row changes it, as a row of an email already there does.
  if (inserted.length < values.length) {
    const missing = values.map((v) => v.email).filter((e) => !made.participants.has(e));
    made.existing = await participantsByEmail(tx, campaign.id, missing);
  }
  if (inserted.length > 0 && !(await countNewParticipants(tx, campaign, inserted.length)))
    throw new QuotaRace();
  if (!imp.silent)
    await recordEvents(
      tx,
      inserted.map((p) => participantAddedEvent(campaign, p, now)),
    );
  return made;
}

/**
 * Changes the participants the batch's rows name that exist, as an update would (`changeParticipant`, in a
 * savepoint each: a refusal such as metadata past its bounds once merged rolls back that row alone). A row
 * whose non-empty cells say what the participant has already changes nothing, without a statement.
 */
async function changeParticipants(
  tx: Ctx,
  campaign: CampaignRow,
  imp: ImportRow,
  rows: ImportableRow[],
  known: Map<string, ParticipantRow>,
  refuse: (r: ImportableRow, reason: string, message: string) => void,
): Promise<{ updated: Set<string> }> {
  const updated = new Set<string>();
  for (const r of rows) {
    const p = known.get(normaliseEmail(r.read.email))!;
    const patch: ParticipantPatch = {};
    const { fields, metadata } = r.read;
    if (fields.firstName !== undefined && fields.firstName !== p.firstName)
      patch.firstName = fields.firstName;
    if (fields.lastName !== undefined && fields.lastName !== p.lastName) patch.lastName = fields.lastName;
    if (fields.notes !== undefined && fields.notes !== p.notes) patch.notes = fields.notes;
    if (
      metadata &&
      Object.entries(metadata).some(
        ([k, v]) => !p.metadata || !Object.hasOwn(p.metadata, k) || p.metadata[k] !== v,
      )
    )
      patch.metadata = metadata;
    if (Object.keys(patch).length === 0) continue;
    try {
      const after = await tx.db.transaction(async (db) => {
        const sp = { ...tx, db };
        const before = await lockParticipant(sp, campaign.id, p.id);
        return changeParticipant(sp, campaign, before, patch, { silent: imp.silent });
      });
      known.set(p.email, after.participant);
      if (after.changed.length > 0) updated.add(p.id);
    } catch (err) {
      if (err instanceof DomainError && err.code === 'VALIDATION_ERROR') {
        refuse(r, err.code, err.message);
        continue;
      }
      throw err;
    }
  }
  return { updated };
}

/**
 * The loyalty actions that carry the rows' counts over (`actionsToCarry`): `SET` compares with what the
 * participant counts, its actions not applied yet included (read in one statement). Each action's metadata says
 * where it came from (`source: IMPORT`, the import's id).
 */
async function carryCounts(
  tx: Ctx,
  imp: ImportRow,
  rows: ImportableRow[],
  byEmail: Map<string, ParticipantRow>,
  created: Map<string, ParticipantRow>,
): Promise<{ inputs: QueuedActionInput[]; participants: Set<string> }> {
  const withCounts = rows.filter((r) => r.read.counts.size > 0 && byEmail.has(normaliseEmail(r.read.email)));
  const out = { inputs: [] as QueuedActionInput[], participants: new Set<string>() };
  if (withCounts.length === 0) return out;
  const existingIds = withCounts
    .map((r) => byEmail.get(normaliseEmail(r.read.email))!)
    .filter((p) => !created.has(p.email))
    .map((p) => p.id);
  const queued = imp.mode === 'SET' ? await queuedCounts(tx, existingIds) : new Map<string, number>();
  for (const r of withCounts) {
    const p = byEmail.get(normaliseEmail(r.read.email))!;
    for (const [rewardId, requested] of r.read.counts) {
      const current =
        (p.loyaltyActionCountsPerReward[rewardId] ?? 0) + (queued.get(`${p.id}\n${rewardId}`) ?? 0);
      const n = Math.min(actionsToCarry(imp.mode, requested, current), IMPORT_MAX_CARRIED_COUNT);
      if (n > 0) out.participants.add(p.id);
      for (let i = 0; i < n; i++) {
        out.inputs.push({
          campaignId: p.campaignId,
          participantId: p.id,
          rewardId,
          metadata: { source: 'IMPORT', importId: imp.id },
          importId: imp.id,
          silent: imp.silent,
        });
      }
    }
  }
  return out;
}

/** The participants' loyalty actions still QUEUED, by `participantId \n rewardId`: counted as theirs by `SET`. */
async function queuedCounts(tx: Ctx, participantIds: string[]): Promise<Map<string, number>> {
  if (participantIds.length === 0) return new Map();
  const rows = await tx.db
    .select({ p: loyaltyActions.participantId, r: loyaltyActions.rewardId, n: sql<number>`count(*)::int` })
    .from(loyaltyActions)
    .where(and(anyOf(loyaltyActions.participantId, participantIds), eq(loyaltyActions.status, 'QUEUED')))
    .groupBy(loyaltyActions.participantId, loyaltyActions.rewardId);
  return new Map(rows.map((x) => [`${x.p}\n${x.r}`, x.n]));
}
