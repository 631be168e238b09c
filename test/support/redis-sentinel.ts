import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { redisCli as cli, sleep, spawnRedis, until } from './local-servers';
import { freePort } from './processes';

export type TestRedisSentinel = {
  /** `host:port,…` of the sentinels, as `REDIS_SENTINELS` takes it. */
  sentinels: string;
  /** The same sentinels, as a client's `sentinels` option takes them. */
  addresses: { host: string; port: number }[];
  name: string;
  /** The master's port, as the sentinels answer it now. */
  master(): Promise<number>;
  /** Kills the master at once (SIGKILL). */
  killMaster(): Promise<number>;
  /** Resolves once the sentinels name a master other than `port`. */
  failedOver(port: number, timeoutMs?: number): Promise<number>;
  stop(): Promise<void>;
};

/**
 * Redis behind Sentinel, of the test's own, on loopback ports: a master, a replica, three sentinels (quorum 2,
 * a master down after 1 s), nothing kept on disk. Resolves once the replica has synced and every sentinel knows
 * both.
 */
export async function startRedisSentinel(name = 'stampcard'): Promise<TestRedisSentinel> {
  const dir = mkdtempSync(join(tmpdir(), 'stampcard-sentinel-'));
  const children = new Map<number, ChildProcess>();
  const redis = (port: number, extra: string[]) => {
    children.set(port, spawnRedis(port, dir, extra));
  };
  const stop = async () => {
    for (const c of children.values()) c.kill('SIGKILL');
    await sleep(100);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const masterPort = await freePort();
    const replicaPort = await freePort();
    redis(masterPort, []);
    redis(replicaPort, ['--replicaof', '127.0.0.1', String(masterPort)]);
    await until(
      'the replica syncing',
      async () => (await cli(replicaPort, 'info', 'replication')).includes('master_link_status:up'),
      10_000,
    );
    const sentinelPorts = [await freePort(), await freePort(), await freePort()];
    for (const port of sentinelPorts) {
      const conf = join(dir, `sentinel-${port}.conf`);
      writeFileSync(
        conf,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${dir}`,
          `sentinel monitor ${name} 127.0.0.1 ${masterPort} 2`,
          `sentinel down-after-milliseconds ${name} 1000`,
          `sentinel failover-timeout ${name} 5000`,
          `sentinel parallel-syncs ${name} 1`,
          '',
        ].join('\n'),
      );
      const child = spawn('redis-server', [conf, '--sentinel'], { stdio: 'ignore' });
      children.set(port, child);
    }
    await until(
      'every sentinel knowing the replica and the others',
      async () => {
        for (const port of sentinelPorts) {
          const info = await cli(port, 'sentinel', 'master', name);
          const field = (key: string) => {
            const lines = info.split('\n').map((l) => l.trim());
            return Number(lines[lines.indexOf(key) + 1]);
          };
          if (field('num-slaves') < 1 || field('num-other-sentinels') < 2) return false;
        }
        return true;
      },
      15_000,
    );
    const master = async () =>
      Number((await cli(sentinelPorts[0]!, 'sentinel', 'get-master-addr-by-name', name)).split('\n')[1]);
    const addresses = sentinelPorts.map((port) => ({ host: '127.0.0.1', port }));
    return {
      sentinels: addresses.map((a) => `${a.host}:${a.port}`).join(','),
      addresses,
      name,
      master,
      async killMaster() {
        const port = await master();
        children.get(port)?.kill('SIGKILL');
        return port;
      },
      async failedOver(port, timeoutMs = 20_000) {
        let now = port;
        await until(
          'a failover',
          async () => {
            now = await master();
            return now !== port && (await cli(now, 'info', 'replication')).includes('role:master');
          },
          timeoutMs,
        );
        return now;
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
