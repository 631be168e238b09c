import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { connectPostgres } from '../src/connect';

const TCP = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const SOCKET_DIR = '/var/run/postgresql';

/** The same server through its Unix socket (where the local server has one, as on Debian). */
function socketUrl(): string {
  const u = new URL(TCP);
  u.hostname = 'localhost';
  u.searchParams.set('host', SOCKET_DIR);
  return u.toString();
}

describe('connectPostgres', () => {
  it('a URL with ?host=/dir connects through the Unix socket in that directory; any other through TCP', async () => {
    expect(existsSync(`${SOCKET_DIR}/.s.PGSQL.${new URL(TCP).port || 5432}`)).toBe(true);
    const overSocket = connectPostgres(socketUrl(), { max: 1, onnotice: () => {} });
    const overTcp = connectPostgres(TCP, { max: 1, onnotice: () => {} });
    try {
      // A socket connection has no server address; a TCP one has the one it reached.
      const [s] =
        await overSocket`select inet_server_addr()::text as addr, current_setting('application_name') as app`;
      const [t] = await overTcp`select inet_server_addr()::text as addr`;
      expect(s!.addr).toBeNull();
      expect(t!.addr).not.toBeNull();
    } finally {
      await Promise.all([overSocket.end(), overTcp.end()]);
    }
  });

  it("keeps the URL's other parameters, and a socket directory that does not exist fails to connect", async () => {
    const u = new URL(socketUrl());
    u.searchParams.set('application_name', 'stampcard-test');
    const sql = connectPostgres(u.toString(), { max: 1, onnotice: () => {} });
    try {
      const [row] = await sql`select current_setting('application_name') as app`;
      expect(row!.app).toBe('stampcard-test');
    } finally {
      await sql.end();
    }
    const missing = new URL(socketUrl());
    missing.searchParams.set('host', '/nonexistent-socket-dir');
    const broken = connectPostgres(missing.toString(), { max: 1, connect_timeout: 2 });
    await expect(broken`select 1`).rejects.toMatchObject({ code: 'ENOENT' });
    await broken.end();
  });
});
