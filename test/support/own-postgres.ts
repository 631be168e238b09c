import { execFileSync } from 'node:child_process';
import { chownSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './processes';

/** A PostgreSQL cluster of a test's own: the shared one on 5432 is never restarted, paused or stopped. */
export type OwnPostgres = {
  /** `postgres://postgres@127.0.0.1:PORT/<database>` */
  url(database: string): string;
  /** `pg_ctl restart -m fast`: every connection is closed, the server is back when it returns. */
  restart(): void;
  /** SIGSTOP the postmaster and every backend: connections stay open and nothing answers, until `thaw`. */
  freeze(): void;
  thaw(): void;
  /** A streaming standby of it (`pg_basebackup -R`), started on a port of its own and destroyed with it. */
  standby(): Promise<OwnStandby>;
  /** Stops it (immediate) and removes its files; safe to call twice. */
  destroy(): void;
};

/** A hot standby of an own cluster: read-only, replaying what the primary streams to it. */
export type OwnStandby = {
  url(database: string): string;
  /** `pg_ctl stop -m immediate`: connections are cut and nothing answers, until `start`. */
  stop(): void;
  start(): void;
};

/** The newest PostgreSQL installed as Debian lays it out (`/usr/lib/postgresql/<major>/bin`). */
function binDir(): string {
  const root = '/usr/lib/postgresql';
  const majors = readdirSync(root)
    .filter((d) => /^\d+$/.test(d))
    .sort((a, b) => Number(b) - Number(a));
  if (majors.length === 0) throw new Error(`no PostgreSQL under ${root}`);
  return join(root, majors[0]!, 'bin');
}

/**
 * initdb into a fresh temporary directory and start it on a free port. PostgreSQL refuses to run as root
 * (the tests do, in CI), so as root its binaries run as the `postgres` user, who owns the directory.
 */
export async function startOwnPostgres(): Promise<OwnPostgres> {
  const bin = binDir();
  const dir = mkdtempSync(join(tmpdir(), 'stampcard-pg-'));
  const data = join(dir, 'data');
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dir, uid, gid);
  }
  const run = (tool: string, args: string[]) =>
    asRoot
      ? execFileSync('runuser', ['-u', 'postgres', '--', join(bin, tool), ...args], { stdio: 'pipe' })
      : execFileSync(join(bin, tool), args, { stdio: 'pipe' });
  let destroyed = false;
  // The data directories of its standbys, stopped before it.
  const standbys: string[] = [];
  const destroy = () => {
    if (destroyed) return;
    try {
      thaw();
    } catch {}
    destroyed = true;
    for (const copy of standbys) {
      try {
        run('pg_ctl', ['-D', copy, '-m', 'immediate', '-w', 'stop']);
      } catch {}
    }
    try {
      run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
    } catch {}
    rmSync(dir, { recursive: true, force: true });
  };
  const pids = () => {
    const postmaster = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    let children = '';
    try {
      children = execFileSync('pgrep', ['-P', String(postmaster)], { encoding: 'utf8' });
    } catch {} // pgrep exits 1 when it finds none
    return [postmaster, ...children.split('\n').filter(Boolean).map(Number)];
  };
  const signal = (sig: NodeJS.Signals) => {
    for (const pid of pids()) {
      try {
        process.kill(pid, sig);
      } catch {}
    }
  };
  const thaw = () => {
    if (!destroyed) signal('SIGCONT');
  };
  try {
    run('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '--no-sync', '--no-locale', '-E', 'UTF8']);
    const port = await freePort();
    const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`;
    run('pg_ctl', ['-D', data, '-o', options, '-l', join(dir, 'log'), '-w', '-t', '30', 'start']);
    // Whatever becomes of the test's hooks, the cluster does not outlive the test process (destroy is sync).
    process.once('exit', destroy);
    return {
      url: (database) => `postgres://postgres@127.0.0.1:${port}/${database}`,
      standby: async () => {
        const copy = join(dir, `standby-${standbys.length}`);
        standbys.push(copy);
        run('pg_basebackup', [
          '-D',
          copy,
          '-R',
          '-X',
          'stream',
          // An immediate checkpoint to start from (a spread one took two minutes), and no fsync of the copy.
          '--checkpoint=fast',
          '--no-sync',
          '-h',
          dir,
          '-p',
          String(port),
          '-U',
          'postgres',
        ]);
        const standbyPort = await freePort();
        const standbyOptions = `-p ${standbyPort} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`;
        const start = () =>
          run('pg_ctl', ['-D', copy, '-o', standbyOptions, '-l', `${copy}.log`, '-w', '-t', '30', 'start']);
        start();
        return {
          url: (database) => `postgres://postgres@127.0.0.1:${standbyPort}/${database}`,
          stop: () => run('pg_ctl', ['-D', copy, '-m', 'immediate', '-w', 'stop']),
          start,
        };
      },
      restart: () =>
        run('pg_ctl', ['-D', data, '-l', join(dir, 'log'), '-m', 'fast', '-w', '-t', '30', 'restart']),
      freeze: () => signal('SIGSTOP'),
      thaw,
      destroy,
    };
  } catch (err) {
    destroy();
    throw err;
  }
}
