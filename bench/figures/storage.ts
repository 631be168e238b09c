import type { Bench } from '../context';
import { paced } from '../load';
import { triggerRequest } from '../seed';
import { settle } from '../settle';
import { progress, round, until, withHeartbeat } from '../util';

/** One table's growth per accepted action: its rows and TOAST (`table`), its indexes. */
export type TableBytes = { table: number; indexes: number; total: number };

export type StorageFigure = {
  /** Actions accepted in the phase. */
  actions: number;
  /** Webhook messages their events made (every event type goes to one endpoint). */
  messages: number;
  /** PostgreSQL bytes per accepted action, every table that grew, largest first. */
  bytesPerAction: { total: number; byTable: Record<string, TableBytes> };
  /** The events the actions recorded, by type: how many, and the average size of their `data` as stored and as JSON. */
  events: Record<string, { count: number; dataBytes: number; jsonBytes: number }>;
};

type Sizes = Map<string, { table: number; indexes: number }>;

/**
 * Every table's size at rest: each table (each partition) is rewritten first (`VACUUM FULL`, indexes rebuilt),
 * so dead row versions and half-empty index pages left by earlier phases count for nothing, and what is
 * measured is what the rows keep costing once vacuum has done its work.
 */
async function sizes(bench: Bench): Promise<Sizes> {
  const tables = await bench.sql<{ name: string }[]>`
    select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = 'public' and c.relkind = 'r'`;
  for (const { name } of tables) await bench.sql.unsafe(`vacuum full "${name}"`);
  // A partitioned table is the sum of its partitions (its own row holds nothing).
  const rows = await bench.sql<{ name: string; table: string; indexes: string }[]>`
    select c.relname as name,
      coalesce((select sum(pg_table_size(t.relid)) from pg_partition_tree(c.oid) t), pg_table_size(c.oid))::text
        as table,
      coalesce((select sum(pg_indexes_size(t.relid)) from pg_partition_tree(c.oid) t), pg_indexes_size(c.oid))::text
        as indexes
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = 'public' and c.relkind in ('r', 'p') and not c.relispartition`;
  return new Map(rows.map((r) => [r.name, { table: Number(r.table), indexes: Number(r.indexes) }]));
}

/**
 * What one action costs PostgreSQL, by table: `rate` actions per second for `durationS`, each for a new
 * participant, on a campaign whose endpoint takes every event type (as a fulfilment integration does), every webhook delivered, then each
 * table's growth at rest (rows, TOAST and indexes, from `pg_table_size` and `pg_indexes_size`, each table
 * rewritten before it is measured: see `sizes`) over the actions accepted. A table's partitions count as the
 * table. Growth is in whole pages, so a figure carries up to 8 KiB of the last page over the actions: at
 * thousands of actions that is a few bytes each.
 */
export async function measureStorage(bench: Bench): Promise<StorageFigure> {
  const { settings, seeded, receiver } = bench;
  const campaign = seeded.campaigns.storage;
  await bench.services.ensure('worker', settings.workers);
  await bench.services.ensure('dispatcher', settings.dispatchers);
  await settle(bench, 'storage');
  receiver.received.length = 0;
  const before = await sizes(bench);
  progress(
    `storage: ${settings.storage.rate} actions/s for ${settings.storage.durationS} s, every event type sent`,
  );
  const load = await withHeartbeat('storage', () =>
    paced({
      urls: bench.apiUrls,
      rate: settings.storage.rate,
      durationS: settings.storage.durationS,
      connections: 32,
      // A new participant for every action, as a program that is growing sees them: each action adds its
      // participant (NEW_PARTICIPANT_ADDED) and applies (LOYALTY_ACTION_APPLIED).
      ...triggerRequest(seeded.apiKey, campaign, settings.participants),
      body: {
        text: JSON.stringify({
          participantEmail: 'storage-{n}@bench.test',
          rewardId: campaign.rewardId,
          metadata: { n: 0 },
        }).replace('"n":0', '"n":{n}'),
        modulo: 1,
      },
      onOk: () => {},
    }),
  );
  let messages = 0;
  await until(
    'every action applied and every message delivered',
    60_000,
    async () => {
      bench.services.assertAlive();
      const [row] = await bench.sql<{ queued: number; pending: number; messages: number }[]>`
        select
          (select count(*)::int from loyalty_actions where campaign_id = ${campaign.id} and status = 'QUEUED') as queued,
          (select count(*)::int from webhook_messages where endpoint_id = ${campaign.endpointId} and status = 'PENDING') as pending,
          (select count(*)::int from webhook_messages where endpoint_id = ${campaign.endpointId}) as messages`;
      messages = row!.messages;
      return row!.queued === 0 && row!.pending === 0 && messages > 0;
    },
    { everyMs: 250, state: () => `${messages} messages` },
  );
  const after = await sizes(bench);
  const eventSizes = await bench.sql<{ type: string; n: number; stored: number; text: number }[]>`
    select type, count(*)::int as n, avg(pg_column_size(data))::int as stored,
      avg(octet_length(data::text))::int as text
    from events where campaign_id = ${campaign.id} group by type order by n desc`;
  const actions = load.ok2xx;
  const byTable: Record<string, TableBytes> = {};
  let total = 0;
  for (const [name, now] of after) {
    const was = before.get(name) ?? { table: 0, indexes: 0 };
    const table = (now.table - was.table) / actions;
    const indexes = (now.indexes - was.indexes) / actions;
    if (table + indexes <= 0) continue;
    byTable[name] = { table: round(table), indexes: round(indexes), total: round(table + indexes) };
    total += table + indexes;
  }
  const sorted = Object.fromEntries(Object.entries(byTable).sort(([, a], [, b]) => b.total - a.total));
  const figure = {
    actions,
    messages,
    bytesPerAction: { total: round(total), byTable: sorted },
    events: Object.fromEntries(
      eventSizes.map((e) => [e.type, { count: e.n, dataBytes: e.stored, jsonBytes: e.text }]),
    ),
  };
  progress(
    `storage: ${actions} actions, ${messages} messages: ${figure.bytesPerAction.total} bytes per action (${Object.entries(
      sorted,
    )
      .map(([name, b]) => `${name} ${b.total}`)
      .join(', ')})`,
  );
  return figure;
}
