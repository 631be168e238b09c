import { type ChildProcess, execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { alive, redisCli, sleep, spawnRedis, until } from './local-servers';
import { freePort } from './processes';

const run = promisify(execFile);

export type RedisClusterNode = { port: number; process: ChildProcess };

/** A cluster node's bus listens this far above its port: Redis refuses a port past 55535 in a cluster. */
const BUS_OFFSET = 10_000;

/**
 * A free port for a cluster node: its bus port (10,000 above) free too, so at most 55,535, and none of `taken`
 * (a node spawned a moment ago may not listen yet, and the system may offer its port again). A fifth of Linux's
 * ephemeral ports (32,768-60,999) are past 55,535: a node started on one of them exited at once, and the cluster
 * never came up (`a node answering not within 5000 ms`).
 */
async function freeNodePort(taken: ReadonlySet<number>): Promise<number> {
  for (let tries = 0; tries < 100; tries++) {
    const port = await freePort();
    if (port + BUS_OFFSET > 65_535 || taken.has(port) || taken.has(port + BUS_OFFSET)) continue;
    if (await canListen(port + BUS_OFFSET)) return port;
  }
  throw new Error('no free port for a Redis Cluster node and its bus in 100 tries');
}

/** Whether a port on loopback is free to listen on now. */
function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

export type TestRedisCluster = {
  /** `host:port,…` of every node, as `REDIS_CLUSTER_NODES` takes it. */
  nodes: string;
  /** The masters' ports, as the cluster sees them now. */
  masters(): Promise<number[]>;
  /** Kills a node at once (SIGKILL), as a machine that dies. */
  kill(port: number): void;
  /** Resolves once every slot is served again and `port` is no master (its replica took over). */
  failedOver(port: number, timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
};

/**
 * A Redis Cluster of the test's own on loopback ports: `masters` masters with `replicas` replicas each, nothing
 * kept on disk, made by `redis-cli --cluster create`. Resolves once every node says `cluster_state:ok` and every
 * replica has synced (one that never synced may not take over).
 */
export async function startRedisCluster(
  opts: { masters?: number; replicas?: number } = {},
): Promise<TestRedisCluster> {
  const masters = opts.masters ?? 3;
  const replicas = opts.replicas ?? 1;
  const dir = mkdtempSync(join(tmpdir(), 'stampcard-cluster-'));
  const nodes: RedisClusterNode[] = [];
  const taken = new Set<number>();
  for (let i = 0; i < masters * (1 + replicas); i++) {
    const port = await freeNodePort(taken);
    taken.add(port).add(port + BUS_OFFSET);
    const child = spawnRedis(port, dir, [
      ...['--cluster-enabled', 'yes', '--cluster-config-file', join(dir, `nodes-${port}.conf`)],
      ...['--cluster-node-timeout', '1000'],
    ]);
    nodes.push({ port, process: child });
  }
  const stop = async () => {
    for (const n of nodes) n.process.kill('SIGKILL');
    await sleep(100);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (const n of nodes) {
      await until('a node answering', async () => (await redisCli(n.port, 'ping')).trim() === 'PONG', 5000);
    }
    await run(
      'redis-cli',
      [
        ...['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`)],
        ...['--cluster-replicas', String(replicas), '--cluster-yes'],
      ],
      { timeout: 30_000 },
    );
    await until(
      'the Redis Cluster ok, its replicas synced',
      async () => {
        for (const n of nodes) {
          if (!(await redisCli(n.port, 'cluster', 'info')).includes('cluster_state:ok')) return false;
          const replication = await redisCli(n.port, 'info', 'replication');
          if (replication.includes('role:slave') && !replication.includes('master_link_status:up'))
            return false;
        }
        return true;
      },
      10_000,
    );
  } catch (err) {
    await stop();
    throw err;
  }
  const live = () => nodes.filter((n) => alive(n.process));
  const masterPorts = async () => {
    const out = await redisCli(live()[0]!.port, 'cluster', 'nodes');
    // `<id> <host:port@bus> <flags> …`: the masters not failing.
    return out
      .split('\n')
      .map((line) => line.split(' '))
      .filter((f) => f.length > 2 && f[2]!.split(',').includes('master') && !f[2]!.includes('fail'))
      .map((f) => Number(/:(\d+)@/.exec(f[1]!)?.[1]));
  };
  return {
    nodes: nodes.map((n) => `127.0.0.1:${n.port}`).join(','),
    masters: masterPorts,
    kill(port) {
      nodes.find((n) => n.port === port)?.process.kill('SIGKILL');
    },
    failedOver: (port, timeoutMs = 20_000) =>
      until(
        `a failover of ${port}`,
        async () => {
          const states = await Promise.all(live().map((n) => redisCli(n.port, 'cluster', 'info')));
          const ports = await masterPorts();
          // Every slot served again: as many masters as before, none of them `port`.
          return (
            states.every((s) => s.includes('cluster_state:ok')) &&
            !ports.includes(port) &&
            ports.length === masters
          );
        },
        timeoutMs,
      ),
    stop,
  };
}
