import type { AuditActorKind, Tx } from '@stampcard/db';
import { sql } from 'drizzle-orm';
import type { Clock } from './clock';
import { DomainError, unavailable } from './errors';
import type { LookupCache } from './lookup-cache';
import { pgError } from './pg-error';

/**
 * Where a caller's durable write stands, for whoever must answer once the caller can wait no longer (the
 * API's request deadline). Core keeps it: `sent` counts the statements that may make a write durable (a
 * unit of work's COMMIT, a write outside a transaction, a group commit's shared insert) from the moment they
 * are handed to the driver until their answer; `outcome` says what the answered ones did. Costs a couple of
 * property writes per write, no statement.
 */
export type CommitState = {
  /** Statements in flight that may commit: until they answer, nobody can say nothing was written. */
  sent: number;
  /**
   * `LANDED`: a write committed. `UNKNOWN`: the connection was lost after one was sent, so whether it
   * committed cannot be told (see `commitOutcomeLost`). Unset while nothing landed.
   */
  outcome?: 'LANDED' | 'UNKNOWN';
  /** What identifies the write in flight (`{ actionId }`), for an answer that cannot tell its outcome. */
  subject?: Record<string, unknown>;
  /** Called each time a statement in flight answers (set by whoever waits for one: the request deadline). */
  onSettled?: () => void;
};

/** One batch of a deleted participant's erasure: its job's payload (and id). */
export type ErasureStep = { participantId: string; batch: number };

/** One batch of a participant import: its job's payload (and id). */
export type ImportStep = { importId: string; batch: number };

/**
 * What a committed write created that another process carries on: outbox events for the dispatcher to fan
 * out, QUEUED loyalty actions for the worker to apply, and the next batch of each erasure or import it left running.
 */
export type Created = {
  eventIds: string[];
  actionIds: string[];
  erasureSteps: ErasureStep[];
  importSteps: ImportStep[];
};

/**
 * The after-commit hand-off: told, once per committed write that created any, the ids of its events and
 * QUEUED actions and its erasures' next steps, never before its COMMIT succeeded and never for a write rolled
 * back or failed. The service queues their jobs here, and may answer before they are queued (the API does: a
 * request's answer waits for its COMMIT, not its jobs); a failure is the port's own to report (the rows are
 * committed, and the worker's relay and the dispatcher's sweep pick up what was not queued), so it never
 * reaches the writer.
 */
export type AfterCommit = (created: Created) => Promise<void>;

/**
 * Told how long a named stage of the work took, in ms (the API's `Server-Timing` answer header, when on):
 * `stage` is a short token (`accept-wait`, `accept-insert`).
 */
export type Spans = (stage: string, ms: number) => void;

/**
 * Who makes a change, for the audit log: an API key (its id, its user, its account), a console session, a portal
 * link, the operator API; the request it came in (`requestId`), and what carried it beyond the request (`via`: a
 * participant import's id).
 */
export type AuditActor = {
  kind: AuditActorKind;
  id: string | null;
  userId?: string | null;
  accountId?: string | null;
  requestId?: string | null;
  via?: string | null;
};

/**
 * Names the transaction's actor for the audit log's triggers (migration 0022): `stampcard.actor`, for this
 * transaction only. A transaction that names none records nothing in the audit log.
 */
export function actAs(db: Tx, actor: AuditActor): Promise<void> {
  return db
    .execute(sql`select set_config('stampcard.actor', ${JSON.stringify(actor)}, true)`)
    .then(() => undefined);
}

/**
 * Whether the caller still waits: only `aborted` is read. An `AbortSignal` is one; the API's deadline sets a
 * plain object's, which costs a request nothing to make (an `AbortSignal` is an event target).
 */
export type Liveness = { readonly aborted: boolean };

/**
 * What every domain operation runs with. `db` is the pool or, inside a unit of work, its transaction.
 * `signal`, when given, is aborted once the caller stopped waiting (a request past its deadline): from then
 * on the operation writes nothing. `commit`, when given, is told when a write is sent and how it ended
 * (see `CommitState`). `cache`, when given, serves the per-request look-ups (API key, campaign) and is told
 * of every change to what it holds. `afterCommit`, when given, is handed what each committed write created
 * (see `AfterCommit`); writers register it with `handOff`. `uncommitted` is set by `unitOfWork` and
 * `commitWrite` only: what their writes created so far, handed on once they commit. `actor`, when given, is who
 * the change is made by: every unit of work names it to the audit log (`actAs`). `spans`, when given, is told how
 * long each measured stage took (see `Spans`).
 */
export type Ctx = {
  db: Tx;
  clock: Clock;
  signal?: Liveness;
  commit?: CommitState;
  cache?: LookupCache;
  afterCommit?: AfterCommit;
  uncommitted?: Created;
  actor?: AuditActor;
  spans?: Spans;
};

const nothingCreated = (): Created => ({ eventIds: [], actionIds: [], erasureSteps: [], importSteps: [] });

/** Hands what a committed write created to the port, if it created anything; the port's failure stays there. */
async function handOver(ctx: Ctx, created: Created): Promise<void> {
  const { eventIds, actionIds, erasureSteps, importSteps } = created;
  const count = eventIds.length + actionIds.length + erasureSteps.length + importSteps.length;
  if (!ctx.afterCommit || count === 0) return;
  try {
    await ctx.afterCommit(created);
  } catch {
    // The port reports its own failures (see `AfterCommit`): the write has committed, whatever happens here.
  }
}

/**
 * Registers what a write created for the after-commit hand-off; whatever records an event, a QUEUED action or
 * an erasure's next step calls it, so no caller has to remember. Inside a unit of work (or `commitWrite`) it is kept until the COMMIT
 * and handed on only if that succeeds. Outside one, the write has committed already (a statement on its own,
 * a group commit's shared insert): it is handed on now. A transaction not opened by `unitOfWork` has no
 * `uncommitted`, and what it registers would be handed on before its COMMIT: open transactions with it.
 */
export async function handOff(ctx: Ctx, created: Partial<Created>): Promise<void> {
  const eventIds = created.eventIds ?? [];
  const actionIds = created.actionIds ?? [];
  const erasureSteps = created.erasureSteps ?? [];
  const importSteps = created.importSteps ?? [];
  const into = ctx.uncommitted;
  if (!into) {
    return handOver(ctx, {
      eventIds: [...eventIds],
      actionIds: [...actionIds],
      erasureSteps: [...erasureSteps],
      importSteps: [...importSteps],
    });
  }
  into.eventIds.push(...eventIds);
  into.actionIds.push(...actionIds);
  into.erasureSteps.push(...erasureSteps);
  into.importSteps.push(...importSteps);
}

/**
 * Throws UNAVAILABLE once the caller's deadline has passed. Called before each write, so a statement that
 * waited behind a stalled store does not land after the caller was told that nothing was accepted.
 */
export function assertLive(ctx: Pick<Ctx, 'signal'>): void {
  if (ctx.signal?.aborted) throw outOfTime();
}

/** The 503 of a write not sent because its caller stopped waiting: true, since nothing was sent. */
export function outOfTime(): DomainError {
  return unavailable('The request ran out of time waiting for the database: nothing was written');
}

/** Connection-level SQLSTATEs: the server went away (class 08) or is shutting down or starting up. */
const LOST_SQLSTATE = /^(08[0-9A-Z]{3}|57P0[1-3])$/;

/**
 * True when a statement that may commit failed without the database saying so: the connection was lost
 * after it was sent (postgres.js `CONNECTION_CLOSED`, a socket error, a server shutting down). The server
 * may have committed it before the answer was lost, so nobody can say it did not. Any other SQLSTATE is the
 * server's own answer: the statement failed and its transaction rolled back.
 */
export function commitOutcomeLost(err: unknown): boolean {
  const pg = pgError(err);
  return pg === undefined || LOST_SQLSTATE.test(pg.code);
}

/** The 503 of a write whose COMMIT was sent but whose answer was lost. */
export function commitOutcomeUnknown(subject: Record<string, unknown> = {}, cause?: unknown): DomainError {
  const lookup =
    typeof subject.actionId === 'string'
      ? `look up loyalty action ${subject.actionId} before repeating the request`
      : 'look the change up before repeating the request';
  return new DomainError(
    'UNAVAILABLE',
    `The database stopped answering after the write was sent: whether it was recorded is unknown; ${lookup}`,
    { outcome: 'UNKNOWN', ...subject },
    { cause },
  );
}

/** Marks a statement that may commit as sent: from here, nobody can say that nothing was written. */
export function markSent(commit: CommitState | undefined, subject: Record<string, unknown> | undefined) {
  if (!commit) return;
  commit.sent += 1;
  if (subject) commit.subject = subject;
}

/**
 * Records how a sent statement ended: `true` it committed, `false` the database refused it (nothing
 * written), or the error it failed with. Answers the error to throw: a lost answer becomes the 503 that
 * says the outcome is unknown.
 */
export function settleCommit(
  commit: CommitState | undefined,
  result: boolean | { error: unknown },
  subject?: Record<string, unknown>,
): unknown {
  let thrown: unknown;
  if (result === true) {
    if (commit) commit.outcome = 'LANDED';
  } else if (result !== false) {
    thrown = result.error;
    if (commitOutcomeLost(result.error)) {
      if (commit) commit.outcome ??= 'UNKNOWN';
      thrown = commitOutcomeUnknown(subject ?? commit?.subject, result.error);
    }
  }
  if (commit) {
    commit.sent -= 1;
    commit.onSettled?.();
  }
  return thrown;
}

/**
 * A write that commits on its own (outside a unit of work): sent only while the caller still waits
 * (`assertLive`), tracked on `ctx.commit` (when given) until it answers, and once it committed, what it
 * registered (`handOff`, on the ctx `write` is given) is handed to `ctx.afterCommit`. Inside a unit of work
 * it is only checked: the unit's COMMIT is what lands, and hands on. `subject` names the write for a 503 that
 * cannot tell whether it landed.
 */
export async function commitWrite<T>(
  ctx: Ctx,
  write: (ctx: Ctx) => PromiseLike<T>,
  subject?: Record<string, unknown>,
): Promise<T> {
  assertLive(ctx);
  if (ctx.uncommitted) return write(ctx);
  // A change someone makes is recorded in the audit log by its transaction: the write gets one.
  if (ctx.actor) return unitOfWork(ctx, async (tx) => write(tx), subject);
  const created = nothingCreated();
  const own: Ctx = { ...ctx, uncommitted: created };
  const commit = ctx.commit;
  let result: T;
  if (!commit) {
    result = await write(own);
  } else {
    markSent(commit, subject);
    try {
      result = await write(own);
    } catch (error) {
      throw settleCommit(commit, { error }, subject);
    }
    settleCommit(commit, true);
  }
  await handOver(ctx, created);
  return result;
}

/**
 * A transaction that commits only while the caller still waits: checked before it begins and again just
 * before COMMIT (a late result rolls back instead). Once that last check passes, COMMIT goes out in the same
 * turn of the event loop (postgres.js sends it as soon as this callback resolves, with no timer between), so
 * `ctx.commit` is marked sent there: a deadline that passes from then on waits for the outcome. The
 * statements inside see no `commit`: only this COMMIT can land them. What they register (`handOff`) is
 * handed to `ctx.afterCommit` once, after the COMMIT succeeded, before this returns; a rollback or an error
 * hands on nothing. Nested in another unit (a savepoint), what it registered joins the outer unit's. With
 * `ctx.actor`, the transaction names it to the audit log first (`actAs`).
 */
export async function unitOfWork<T>(
  ctx: Ctx,
  fn: (tx: Ctx) => Promise<T>,
  subject?: Record<string, unknown>,
): Promise<T> {
  assertLive(ctx);
  const commit = ctx.commit;
  const created = nothingCreated();
  let committing = false;
  let result: T;
  try {
    result = await ctx.db.transaction(async (db) => {
      // Sent ahead of the unit's first statement, on the same connection: no round trip of its own. Its failure
      // fails that statement too.
      const naming = ctx.actor && !ctx.uncommitted ? actAs(db, ctx.actor) : undefined;
      naming?.catch(() => undefined);
      const inner = await fn({ ...ctx, db, commit: undefined, uncommitted: created });
      await naming;
      assertLive(ctx);
      committing = commit !== undefined;
      markSent(commit, subject);
      return inner;
    });
  } catch (error) {
    if (committing) throw settleCommit(commit, { error }, subject);
    throw error;
  }
  if (committing) settleCommit(commit, true);
  await handOff(ctx, created);
  return result;
}
