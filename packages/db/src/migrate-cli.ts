import { ConfigError, directDatabaseUrl, loadDatabaseConfig, safeError } from '@stampcard/config';
import { runMigrations } from './migrate';

/**
 * `npm run db:migrate`: needs only DATABASE_URL, or DATABASE_DIRECT_URL past a pooler (no OPERATOR_TOKEN, also in
 * production). Every failure is one
 * line and exit code 1, never a stack trace.
 */
async function main() {
  let url: string;
  try {
    url = directDatabaseUrl(loadDatabaseConfig());
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    console.error(err.message);
    process.exit(1);
  }
  const target = new URL(url);
  const where = `${target.hostname}:${target.port || 5432}${target.pathname}`;
  try {
    await runMigrations(url);
  } catch (err) {
    // The first code along the cause chain (ECONNREFUSED, 28P01, 3D000…): the message may hold parameters.
    let info: Record<string, unknown> | undefined = safeError(err);
    const type = info.type;
    while (info && info.code === undefined) info = info.cause as Record<string, unknown> | undefined;
    console.error(
      `Migrations failed on ${where}: ${String(info?.code ?? type)}. Is PostgreSQL running, and DATABASE_URL right?`,
    );
    process.exit(1);
  }
  console.log(`Migrations applied to ${target.pathname.slice(1)}`);
}

await main();
