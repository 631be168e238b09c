import { ConfigError, createLogger, loadConfig } from '@stampcard/config';
import { runMigrations } from '@stampcard/db';
import { startHeartbeat } from './heartbeat';
import { preflight } from './preflight';
import { startStack } from './stack';

const ROLES = ['all', 'api', 'worker', 'dispatcher'] as const;
type Role = (typeof ROLES)[number];

/**
 * `npm start` (role `all`): check the services, apply migrations, run the API, the worker and the webhook
 * dispatcher until SIGTERM. `start.ts api` / `worker` / `dispatcher` run one of them alone, for production,
 * where `npm run db:migrate` runs once before them.
 */
async function main() {
  const role = (process.argv[2] ?? 'all') as Role;
  if (!ROLES.includes(role)) {
    console.error(`Unknown role "${role}": use one of ${ROLES.join(', ')}`);
    process.exit(1);
  }
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(1);
    }
    throw err;
  }
  const problems = await preflight(config.DATABASE_URL, config.REDIS_URL);
  if (problems.length > 0) {
    console.error(`Stampcard cannot start:\n\n${problems.join('\n\n')}`);
    process.exit(1);
  }
  const logger = createLogger({ level: config.LOG_LEVEL, name: 'stampcard' });
  if (role === 'all') {
    await runMigrations(config.DATABASE_URL);
    logger.info('migrations applied');
  }
  let stack: Awaited<ReturnType<typeof startStack>>;
  try {
    stack = await startStack({
      config,
      logger,
      api: role === 'all' || role === 'api' ? 'serve' : false,
      worker: role === 'all' || role === 'worker',
      dispatcher: role === 'all' || role === 'dispatcher',
    });
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code !== 'EADDRINUSE' && code !== 'EACCES') throw err;
    console.error(
      code === 'EADDRINUSE'
        ? `Port ${config.PORT} on ${config.HOST} is already in use: stop what uses it, or pick another port, e.g. PORT=${config.PORT + 1} npm start`
        : `Port ${config.PORT} on ${config.HOST} cannot be opened by this user: pick a port above 1023, e.g. PORT=3000 npm start`,
    );
    process.exit(1);
  }
  if (stack.api)
    logger.info({ port: stack.api.port }, `Stampcard API listening on http://localhost:${stack.api.port}/v1`);
  if (stack.worker) logger.info({ concurrency: config.WORKER_CONCURRENCY }, 'worker and relay running');
  if (stack.dispatcher)
    logger.info({ concurrency: config.DISPATCHER_CONCURRENCY }, 'webhook dispatcher and sweep running');
  const stopHeartbeat =
    (stack.worker || stack.dispatcher) && config.HEARTBEAT_FILE
      ? startHeartbeat(stack, config.HEARTBEAT_FILE)
      : null;
  if (config.operatorTokenGenerated && stack.api) {
    console.log(
      `\nOPERATOR_TOKEN was not set; this run uses:\n  ${config.OPERATOR_TOKEN}\n` +
        `Operator API: http://localhost:${stack.api?.port}/admin/v1  Queue dashboard: http://localhost:${stack.api?.port}/admin/queues\n`,
    );
  }
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down: no new requests, finishing jobs in hand');
    const force = setTimeout(() => {
      logger.error('shutdown took longer than 30 s; exiting');
      process.exit(1);
    }, 30_000);
    force.unref();
    stopHeartbeat?.();
    await stack.close();
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

await main();
