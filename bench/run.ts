/**
 * `npm run bench [-- --quick] [-- --api-processes N --workers M --dispatchers D] [-- --redis-cluster] [-- --statements]`:
 * Stampcard's performance reference.
 *
 * On a database and a Redis prefix of its own, it runs the service as production does (migrations, then the
 * API, worker and dispatcher each in a process of its own, NODE_ENV=production) and measures, each beside a
 * baseline taken in the same run with the same tool and concurrency: ingest (autocannon at full speed vs a
 * bare @hono/node-server), apply (one worker draining a backlog vs one transaction per action), dispatch
 * (the dispatcher replaying deliveries vs a plain undici POST loop), end to end (a fixed 500 actions/s,
 * action sent → webhook received) and every process's peak RSS. BENCHMARKS.md explains each figure.
 *
 * Everything is bounded in time and cleaned up, on failure too: children stopped, Redis keys and the
 * database dropped. The last line printed is `ratios: ingest=… apply=… dispatch=… e2e_p99_ms=… rss_mb=…`;
 * the whole run goes to bench/results/latest.json.
 */
import { randomBytes } from 'node:crypto';
import { connectPostgres } from '@stampcard/db';
import { createQueues, createRedis, redisTarget } from '@stampcard/jobs';
import { startReceiver } from '../test/support/receiver';
import { startRedisCluster } from '../test/support/redis-cluster';
import { deleteRedisKeys } from '../test/support/redis-keys';
import type { Bench } from './context';
import { createDatabase, databaseUrl, dropDatabase, postgresVersion, redisVersion } from './database';
import { measureApply } from './figures/apply';
import { measureDispatch } from './figures/dispatch';
import { measureE2e } from './figures/e2e';
import { measureIngest } from './figures/ingest';
import { measureStorage } from './figures/storage';
import { type Health, healthLine, healthOf } from './health';
import { type Figures, machine, ratiosLine, summary, writeResults } from './report';
import { seed } from './seed';
import { ServiceRunner } from './service';
import { type FigureName, readSettings } from './settings';
import {
  type FigureStatements,
  readStatements,
  resetStatements,
  statementLines,
  statementsUnavailable,
} from './statements';
import { progress, round, within } from './util';

const argv = process.argv.slice(2);
const settings = readSettings(argv);
const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const runId = `stampcard_bench_${randomBytes(4).toString('hex')}`;
const dbUrl = databaseUrl(adminUrl, runId);
const token = `op_${randomBytes(24).toString('hex')}`;

/** What each service process gets (the operator token is left out of the results). */
const serviceEnv: Record<string, string> = {
  NODE_ENV: 'production',
  LOG_LEVEL: 'warn',
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
  HOST: '127.0.0.1',
  DATABASE_URL: dbUrl,
  REDIS_URL: redisUrl,
  QUEUE_PREFIX: runId,
  // Each answer says where its time went (the ingest figure's stage table).
  SERVER_TIMING: 'true',
};

/** A URL without its password, for the results file. */
function redact(url: string): string {
  const u = new URL(url);
  if (u.password) u.password = '***';
  return u.toString();
}

/** Undo steps, run last-registered first, each bounded, whatever failed before. */
const undo: { what: string; run: () => Promise<unknown> }[] = [];
let cleaning: Promise<void> | null = null;
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    for (const step of undo.reverse()) {
      await within(step.what, 30_000, step.run()).catch((err: Error) =>
        progress(`cleanup: ${step.what} failed: ${err.message}`),
      );
    }
  })();
  return cleaning;
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    progress(`${signal}: stopping and cleaning up`);
    void cleanup().finally(() => process.exit(130));
  });
}
const watchdog = setTimeout(() => {
  progress(`the run took longer than ${settings.deadlineMs / 1000} s: stopping and cleaning up`);
  void cleanup().finally(() => process.exit(1));
}, settings.deadlineMs);

const startedAt = new Date();
const figures: Figures = {};
const statements: Partial<Record<FigureName, FigureStatements>> = {};
const errors: string[] = [];
let services: ServiceRunner | null = null;
let machineInfo = machine('unknown', 'unknown');
let health: Health = { deadlocks: null, logLines: {} };

try {
  progress(
    `Stampcard bench, ${settings.mode}: API × ${settings.apiProcesses}, worker × ${settings.workers}, dispatcher × ${settings.dispatchers}${settings.redisCluster ? ', on a Redis Cluster' : ''}; database and Redis prefix ${runId}`,
  );
  machineInfo = machine(await postgresVersion(adminUrl), await redisVersion(redisUrl));
  progress(
    `machine: ${machineInfo.cpus} CPUs (${machineInfo.cpuModel}), Node ${machineInfo.node}, ${machineInfo.postgres.split(' on ')[0]}, Redis ${machineInfo.redis}`,
  );

  await createDatabase(adminUrl, runId);
  undo.push({ what: `dropping database ${runId}`, run: () => dropDatabase(adminUrl, runId) });
  if (settings.redisCluster) {
    progress('starting a Redis Cluster of the run: 3 masters, a replica each, on loopback ports');
    const cluster = await startRedisCluster();
    undo.push({ what: 'stopping the Redis Cluster', run: () => cluster.stop() });
    serviceEnv.REDIS_CLUSTER_NODES = cluster.nodes;
  } else {
    undo.push({ what: `deleting Redis keys ${runId}:*`, run: () => deleteRedisKeys(redisUrl, runId) });
  }

  const runner = new ServiceRunner({ ...serviceEnv, OPERATOR_TOKEN: token });
  services = runner;
  undo.push({ what: 'stopping the service processes', run: () => runner.stopAll() });
  progress('migrations');
  await runner.migrate();
  const apiUrls: string[] = [];
  for (let i = 0; i < settings.apiProcesses; i++) {
    const api = await runner.startApi();
    apiUrls.push(`http://127.0.0.1:${api.port}`);
  }
  runner.startSampling(settings.rssSampleMs);
  progress(`API ready on ${apiUrls.join(', ')}`);

  const receiver = await startReceiver();
  undo.push({ what: 'closing the receiver', run: () => receiver.close() });
  const sql = connectPostgres(dbUrl, { max: 4, onnotice: () => {} });
  undo.push({ what: 'closing the bench pool', run: () => sql.end({ timeout: 5 }) });
  const redis = createRedis(
    redisTarget({
      REDIS_URL: redisUrl,
      REDIS_CLUSTER_NODES: serviceEnv.REDIS_CLUSTER_NODES?.split(',').map((a) => {
        const [host, port] = a.split(':');
        return { host: host!, port: Number(port) };
      }),
    }),
  );
  // As the services split the hot queue (`QUEUE_SHARDS` from the environment, which they inherit).
  const queues = createQueues(redis, runId, undefined, Number(process.env.QUEUE_SHARDS ?? 1));
  undo.push({
    what: 'closing the bench queues',
    run: async () => {
      await queues.close();
      redis.disconnect();
    },
  });

  progress(
    `seeding: account, user, key, campaigns, rewards, endpoints; ${settings.participants} participants each`,
  );
  const seeded = await seed({
    apiUrl: apiUrls[0]!,
    token,
    sql,
    participants: settings.participants,
    receiverUrl: receiver.url,
  });
  const bench: Bench = {
    settings,
    services: runner,
    apiUrls,
    dbUrl,
    redisUrl,
    sql,
    queues,
    redis,
    seeded,
    receiver,
    token,
  };

  if (settings.statements) {
    const why = await statementsUnavailable(sql);
    if (why) throw new Error(`--statements: ${why}`);
  }
  /** One figure, with the statements the run's database executed meanwhile when `--statements` asks. */
  const measure = async <F>(name: FigureName, run: () => Promise<F>): Promise<F> => {
    if (settings.statements) await resetStatements(sql);
    const figure = await run();
    if (settings.statements) {
      const read = await readStatements(sql);
      statements[name] = read;
      for (const line of statementLines(name, read)) progress(line);
    }
    return figure;
  };
  const wanted = new Set(settings.only);
  if (wanted.has('ingest')) figures.ingest = await measure('ingest', () => measureIngest(bench));
  if (wanted.has('apply')) figures.apply = await measure('apply', () => measureApply(bench));
  if (wanted.has('dispatch')) figures.dispatch = await measure('dispatch', () => measureDispatch(bench));
  if (wanted.has('e2e')) figures.e2e = await measure('e2e', () => measureE2e(bench));
  if (wanted.has('ordered')) figures.ordered = await measure('ordered', () => measureE2e(bench, true));
  if (wanted.has('storage')) figures.storage = await measure('storage', () => measureStorage(bench));
} catch (err) {
  const message = err instanceof Error ? err.message : String(err);
  errors.push(message);
  progress(`FAILED: ${message}`);
  if (err instanceof Error && err.stack) console.error(err.stack);
} finally {
  if (services) {
    await within('stopping the service processes', 60_000, services.stopAll()).catch(() => {});
    const processes = services.peaks();
    if (processes.length > 0) {
      figures.memory = { processes, maxMb: Math.max(...processes.map((p) => p.peakRssMb)) };
    }
  }
  // Once the processes have stopped: their statistics are flushed when they end.
  const admin = connectPostgres(adminUrl, { max: 1, onnotice: () => {}, connect_timeout: 5 });
  health = await healthOf(admin, runId);
  await admin.end({ timeout: 5 });
}

const reported = { ...serviceEnv, DATABASE_URL: redact(dbUrl), REDIS_URL: redact(redisUrl) };
const file = writeResults({
  startedAt,
  settings,
  argv,
  machine: machineInfo,
  serviceEnv: reported,
  figures,
  statements: settings.statements ? statements : undefined,
  health,
  errors,
});
await cleanup();
clearTimeout(watchdog);
progress(`done in ${round((Date.now() - startedAt.getTime()) / 1000, 1)} s; the whole run is in ${file}`);
console.log(`\n${summary(figures)}\n`);
console.log(`${healthLine(health)}\n`);
console.log(ratiosLine(figures));
process.exit(errors.length > 0 ? 1 : 0);
