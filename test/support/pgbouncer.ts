import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sleep, until } from './local-servers';
import { freePort } from './processes';

const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port }, () => {
      socket.end();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });

export type TestPgBouncer = {
  /** `DATABASE_URL` through the pooler for database `name`. */
  urlFor(name: string): string;
  stop(): Promise<void>;
};

/**
 * Debian's PgBouncer of the test's own in transaction mode, in front of the local PostgreSQL (any database, as
 * user postgres). The role's settings a production pooler would carry come from `connect_query` here: the
 * service sends none through a pooler. Runs as the `postgres` user when the test runs as root (PgBouncer
 * refuses root).
 */
export async function startPgBouncer(target = { host: '127.0.0.1', port: 5432 }): Promise<TestPgBouncer> {
  const dir = mkdtempSync(join(tmpdir(), 'stampcard-pgbouncer-'));
  chmodSync(dir, 0o777);
  const port = await freePort();
  const ini = join(dir, 'pgbouncer.ini');
  writeFileSync(
    ini,
    [
      '[databases]',
      // What a production role would carry (`ALTER ROLE … SET`): the service sends no session setting here.
      `* = host=${target.host} port=${target.port} user=postgres connect_query='SET statement_timeout = 3000; SET lock_timeout = 3000; SET idle_in_transaction_session_timeout = 10000'`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = any',
      'pool_mode = transaction',
      'max_client_conn = 500',
      'default_pool_size = 40',
      'ignore_startup_parameters = extra_float_digits',
      '',
    ].join('\n'),
  );
  chmodSync(ini, 0o644);
  const asRoot = process.getuid?.() === 0;
  const ids = asRoot
    ? {
        uid: Number(execFileSync('id', ['-u', 'postgres']).toString().trim()),
        gid: Number(execFileSync('id', ['-g', 'postgres']).toString().trim()),
      }
    : {};
  const child: ChildProcess = spawn('pgbouncer', [ini], { stdio: 'ignore', ...ids });
  try {
    await until('PgBouncer listening', async () => child.exitCode === null && (await listening(port)), 5000);
  } catch (err) {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    urlFor: (name) => `postgres://postgres@127.0.0.1:${port}/${encodeURIComponent(name)}`,
    async stop() {
      child.kill('SIGTERM');
      await sleep(100);
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
