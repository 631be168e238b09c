import {
  type BuiltOnce,
  builtOnce,
  clientOf,
  type Database,
  events,
  type Tx,
  webhookMessages,
} from '@stampcard/db';
import { type Query, type SQL, sql } from 'drizzle-orm';
import type { Sql } from 'postgres';

/**
 * Reading PostgreSQL's plans in tests: the plan a statement ran with (`EXPLAIN ANALYZE`), its nodes, the rows it
 * read from a table, and the indexes of a partitioned one. The tests that use them make the moment when the
 * planner's statistics mislead it (ANALYZE taken while nothing was in flight, then rows in flight) and check that
 * each hot statement still reads only the rows it names.
 */

export type PlanNode = {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  Plans?: PlanNode[];
};

type Explained = { 'QUERY PLAN': [{ Plan: PlanNode }] };

/** A statement built once (`builtOnce`), with the values of one run. */
export type BuiltOnceRun = { statement: BuiltOnce; values: Record<string, unknown> };

/** What a plan can be read of: a drizzle `sql` statement, a query builder, or a statement built once and its values. */
export type Explainable = SQL | { toSQL(): Query } | BuiltOnceRun;

/** `EXPLAIN ANALYZE` of `statement` on `client`: the plan it ran with. */
async function explained(client: Pick<Sql, 'unsafe'>, statement: Explainable): Promise<PlanNode> {
  const run = 'statement' in statement ? statement : { statement: builtOnce(statement), values: {} };
  const [row] = await client.unsafe<Explained[]>(
    `explain (analyze, format json) ${run.statement.text}`,
    run.statement.params(run.values),
  );
  return row!['QUERY PLAN'][0].Plan;
}

/** The plan `statement` ran with (`EXPLAIN ANALYZE`): what it wrote stays written. */
export const planOf = (db: Tx, statement: Explainable): Promise<PlanNode> =>
  explained(clientOf(db), statement);

class RolledBack extends Error {
  constructor(readonly plan: PlanNode) {
    super('rolled back');
  }
}

/** The plan `statement` ran with, in a transaction rolled back: what it wrote is undone. */
export async function planAsRun(db: Database, statement: Explainable): Promise<PlanNode> {
  try {
    await clientOf(db).begin(async (tx) => {
      throw new RolledBack(await explained(tx, statement));
    });
  } catch (err) {
    if (err instanceof RolledBack) return err.plan;
    throw err;
  }
  throw new Error('unreachable');
}

export function* nodesOf(node: PlanNode): Generator<PlanNode> {
  yield node;
  for (const child of node.Plans ?? []) yield* nodesOf(child);
}

/** Rows of `table` (or a partition of it) that the plan went through, kept or filtered out, across its loops. */
export function rowsRead(plan: PlanNode, table: string): number {
  return [...nodesOf(plan)]
    .filter((n) => n['Relation Name']?.startsWith(table))
    .reduce(
      (sum, n) =>
        sum + ((n['Actual Rows'] ?? 0) + (n['Rows Removed by Filter'] ?? 0)) * (n['Actual Loops'] ?? 1),
      0,
    );
}

/** The indexes the plan read, by name. */
export const indexesRead = (plan: PlanNode): string[] =>
  [...nodesOf(plan)].map((n) => n['Index Name']).filter((name): name is string => name !== undefined);

/** The index `name` and, for a partitioned table's, its partitions' indexes. */
export async function indexFamily(db: Database, name: string): Promise<Set<string>> {
  const rows = await db.execute<{ name: string }>(sql`
    select ${name} as name
    union all
    select c.relname from pg_inherits i join pg_class c on c.oid = i.inhrelid
    where i.inhparent = ${name}::regclass`);
  return new Set(rows.map((r) => r.name));
}

/**
 * A burst: `count` events (`LOYALTY_ACTION_APPLIED`) recorded in one moment, each of participant
 * `<participantPrefix><n>`, and a PENDING message of each to `endpointId`. Ids `evt_<tag>_00001`… and
 * `msg_<tag>_00001`… (no time in them: the legacy partitions). Answers the first `take` messages' ids, in order.
 */
export async function burstOfMessages(
  db: Tx,
  o: {
    campaignId: string;
    endpointId: string;
    count: number;
    tag: string;
    participantPrefix: string;
    take: number;
  },
): Promise<string[]> {
  const tagged = (kind: string) => `${kind}_${o.tag}_`;
  await db.execute(sql`
    with made as (
      insert into ${events} (id, campaign_id, type, data, created_at)
      select ${tagged('evt')} || lpad(g::text, 5, '0'), ${o.campaignId}, 'LOYALTY_ACTION_APPLIED',
        jsonb_build_object('participant', jsonb_build_object('id', ${o.participantPrefix} || g)), now()
      from generate_series(1, ${o.count}::int) g
      returning id, created_at)
    insert into ${webhookMessages}
      (id, endpoint_id, campaign_id, event_id, event_type, status, next_attempt_at, created_at, updated_at, event_at)
    select ${tagged('msg')} || right(id, 5), ${o.endpointId}, ${o.campaignId}, id, 'LOYALTY_ACTION_APPLIED',
      'PENDING', now(), now(), now(), created_at
    from made`);
  return Array.from({ length: o.take }, (_, i) => `${tagged('msg')}${String(i + 1).padStart(5, '0')}`);
}
