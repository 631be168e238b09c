/**
 * `npx tsx bench/pg-transport.ts`: PostgreSQL over TCP against its Unix socket, from the same client the service
 * uses (`connectPostgres`, postgres.js): queries per second and client CPU per query of `select $1` at 1, 6 and
 * 32 queries in flight. `BENCH_DATABASE_URL` (TCP, default the local server) and `BENCH_PG_SOCKET_DIR` (default
 * `/var/run/postgresql`) say where.
 */
import { connectPostgres } from '@stampcard/db';

const tcp = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const socketDir = process.env.BENCH_PG_SOCKET_DIR ?? '/var/run/postgresql';
const socket = new URL(tcp);
socket.hostname = 'localhost';
socket.searchParams.set('host', socketDir);
const QUERIES = 8000;

for (const [name, url] of [
  ['tcp', tcp],
  ['unix socket', socket.toString()],
] as const) {
  const sql = connectPostgres(url, { max: 6, onnotice: () => {} });
  await sql`select 1`;
  for (const inFlight of [1, 6, 32]) {
    let sent = 0;
    const cpu = process.cpuUsage();
    const started = performance.now();
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (sent < QUERIES) {
          sent += 1;
          await sql`select ${sent}::int as n`;
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const used = process.cpuUsage(cpu);
    console.log(
      `${name}, ${inFlight} in flight: ${Math.round(QUERIES / seconds)} queries/s, ` +
        `${Math.round((used.user + used.system) / QUERIES)} µs client CPU per query`,
    );
  }
  await sql.end();
}
