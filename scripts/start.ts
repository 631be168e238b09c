import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  type Config,
  ConfigError,
  createLogger,
  directDatabaseUrl,
  keepOperatorToken,
  type Logger,
  loadConfig,
} from '@stampcard/config';
import { runMigrations } from '@stampcard/db';
import { redisTarget } from '@stampcard/jobs';
import { startTracing } from '@stampcard/telemetry';
import { startHeartbeat } from './heartbeat';
import { preflight } from './preflight';
import { startStack } from './stack';
import { type ReadyMessage, SUPERVISED, supervise } from './supervisor';

const ROLES = ['all', 'api', 'worker', 'dispatcher'] as const;
type Role = (typeof ROLES)[number];

/**
 * `npm start` (role `all`): check the services, apply migrations, then supervise the API, the worker and
 * the webhook dispatcher, each in its own process, until SIGTERM. `start.ts api` / `worker` / `dispatcher`
 * run one of them alone, for production, where `npm run db:migrate` runs once before them and the
 * container runtime restarts a process that exits.
 */
async function main() {
  const role = (process.argv[2] ?? 'all') as Role;
  if (!ROLES.includes(role)) {
    console.error(`Unknown role "${role}": use one of ${ROLES.join(', ')}`);
    process.exit(1);
  }
  let config: Config;
  try {
    // Unset outside production, the operator token is the one kept in OPERATOR_TOKEN_FILE: the same at every start.
    config = keepOperatorToken(loadConfig());
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(1);
    }
    throw err;
  }
  const base = createLogger({ level: config.LOG_LEVEL, name: 'stampcard', format: config.LOG_FORMAT });
  // A role's lines name it (npm start interleaves three); the supervisor's lines name the role they are about.
  const logger = role === 'all' ? base : base.child({ role });
  exitOnUncaught(logger);
  const problems = await preflight(directDatabaseUrl(config), redisTarget(config));
  if (problems.length > 0) {
    console.error(`Stampcard cannot start:\n\n${problems.join('\n\n')}`);
    process.exit(1);
  }
  if (role === 'all') await superviseRoles(config, logger);
  else await runRole(role, config, logger);
}

/**
 * No process goes on after an error nothing handled: its state is unknown (a driver's connection, a
 * half-run job), so it is logged (class, code and frames: `safeError`, never the message) and the process
 * exits 1 for its supervisor (`npm start`'s, or the container runtime) to start a clean one.
 */
function exitOnUncaught(logger: Logger) {
  const die = (origin: string) => (err: unknown) => {
    logger.fatal({ err, origin }, 'uncaught error: exiting, for the supervisor to restart this process');
    process.exit(1);
  };
  process.on('uncaughtException', die('uncaughtException'));
  process.on('unhandledRejection', die('unhandledRejection'));
}

async function superviseRoles(config: Config, logger: Logger) {
  await runMigrations(directDatabaseUrl(config));
  logger.info('migrations applied');
  // Every role must take the same operator token, generated or not.
  const env = { ...process.env, OPERATOR_TOKEN: config.OPERATOR_TOKEN, [SUPERVISED]: '1' };
  let bannerShown = false;
  const supervisor = supervise({
    roles: ['api', 'worker', 'dispatcher'],
    logger,
    spawn: (role) =>
      fork(fileURLToPath(import.meta.url), [role], {
        env: role === 'dispatcher' ? { ...env, METRICS_PORT: dispatcherMetricsPort(config) } : env,
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      }),
    onReady: (msg: ReadyMessage) => {
      if (msg.port === undefined || bannerShown || !config.operatorTokenGenerated) return;
      bannerShown = true;
      printOperatorToken(config, msg.port);
    },
  });
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down: stopping every role');
    await supervisor.stop();
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  const failed = await supervisor.started;
  if (failed !== null && !stopping) {
    stopping = true;
    await supervisor.stop();
    process.exit(failed);
  }
}

/** Under `npm start` the worker's metrics listener takes `METRICS_PORT` and the dispatcher's the next one. */
const dispatcherMetricsPort = (config: Config) =>
  String(config.METRICS_PORT > 0 ? config.METRICS_PORT + 1 : 0);

function printOperatorToken(config: Config, port: number) {
  const kept = config.operatorTokenFile
    ? `, kept in ${config.operatorTokenFile} for every start (export OPERATOR_TOKEN=$(cat ${config.operatorTokenFile}))`
    : '';
  console.log(
    `\nOPERATOR_TOKEN is not set; the operator token${kept}:\n  ${config.OPERATOR_TOKEN}\n` +
      `Operator API: http://localhost:${port}/admin/v1  Queue dashboard: http://localhost:${port}/admin/queues\n`,
  );
}

async function runRole(role: Exclude<Role, 'all'>, config: Config, logger: Logger) {
  // OpenTelemetry, when asked for: every span of this role goes to the collector as `stampcard-<role>`.
  const tracing = config.OTEL_EXPORTER_OTLP_ENDPOINT
    ? startTracing({ serviceName: `stampcard-${role}`, endpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT })
    : null;
  let stack: Awaited<ReturnType<typeof startStack>>;
  try {
    stack = await startStack({
      config,
      logger,
      api: role === 'api' ? 'serve' : false,
      worker: role === 'worker',
      dispatcher: role === 'dispatcher',
      // The API serves /metrics on its own port; a worker or dispatcher on METRICS_PORT (0: none).
      metricsPort: role !== 'api' && config.METRICS_PORT > 0 ? config.METRICS_PORT : undefined,
      // A consumer replaced twice without taking a job: the process's Redis connection is what is stuck.
      onConsumerStuck: (queue) => {
        logger.fatal(
          { queue },
          'a queue consumer stays stuck after being replaced: exiting, for the supervisor to restart this process',
        );
        process.exit(1);
      },
    });
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code !== 'EADDRINUSE' && code !== 'EACCES') throw err;
    // Under `npm start` the dispatcher's metrics take METRICS_PORT + 1: the next free pair starts 2 further.
    const [name, port, next] =
      role === 'api'
        ? ['PORT', config.PORT, config.PORT + 1]
        : ['METRICS_PORT', config.METRICS_PORT, config.METRICS_PORT + 2];
    console.error(
      code === 'EADDRINUSE'
        ? `Port ${port} on ${config.HOST} is already in use: stop what uses it, or pick another port, e.g. ${name}=${next} npm start`
        : `Port ${port} on ${config.HOST} cannot be opened by this user: pick a port above 1023`,
    );
    process.exit(1);
  }
  if (stack.api)
    logger.info(
      { host: config.HOST, port: stack.api.port },
      `Stampcard API listening on http://localhost:${stack.api.port}/v1`,
    );
  if (stack.worker) logger.info({ concurrency: config.WORKER_CONCURRENCY }, 'worker and relay running');
  if (stack.dispatcher)
    logger.info({ concurrency: config.DISPATCHER_CONCURRENCY }, 'webhook dispatcher and sweep running');
  const stopHeartbeat =
    (stack.worker || stack.dispatcher) && config.HEARTBEAT_FILE
      ? startHeartbeat(stack, config.HEARTBEAT_FILE)
      : null;
  const supervised = process.env[SUPERVISED] === '1' && process.send !== undefined;
  if (config.operatorTokenGenerated && stack.api && !supervised) printOperatorToken(config, stack.api.port);
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
    await tracing?.shutdown().catch(() => {});
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  if (supervised) {
    // A supervisor that is gone (killed) leaves no one to stop this role: stop with it.
    process.on('disconnect', () => void stop('supervisor gone'));
    process.send?.({ type: 'stampcard:ready', role, port: stack.api?.port } satisfies ReadyMessage);
  }
}

await main();
