import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import {
  ConfigError,
  createLogger,
  directDatabaseUrl,
  keepOperatorToken,
  loadConfig,
  loadDatabaseConfig,
} from '../src/index';

describe('loadConfig', () => {
  it('gives every setting its default on an empty environment, with a generated operator token', () => {
    const cfg = loadConfig({});
    expect(cfg).toMatchObject({
      NODE_ENV: 'development',
      DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/stampcard',
      REDIS_URL: 'redis://127.0.0.1:6379',
      PORT: 3000,
      HOST: '127.0.0.1',
      OPERATOR_TOKEN_FILE: '.stampcard/operator-token',
      QUEUE_PREFIX: 'stampcard',
      WORKER_CONCURRENCY: 256,
      WORKER_BATCH_SIZE: 128,
      operatorTokenGenerated: true,
    });
    expect(cfg.OPERATOR_TOKEN).toMatch(/^op_[0-9a-f]{48}$/);
    expect(loadConfig({}).OPERATOR_TOKEN).not.toBe(cfg.OPERATOR_TOKEN);
  });

  it('keeps a given operator token and treats empty values as unset', () => {
    const cfg = loadConfig({ OPERATOR_TOKEN: 'a-long-enough-token', PORT: '', WORKER_CONCURRENCY: '8' });
    expect(cfg).toMatchObject({
      OPERATOR_TOKEN: 'a-long-enough-token',
      operatorTokenGenerated: false,
      PORT: 3000,
    });
    expect(cfg.WORKER_CONCURRENCY).toBe(8);
  });

  it('reads the DNS servers of webhook look-ups as a list, and refuses what is not an address', () => {
    expect(loadConfig({}).WEBHOOK_DNS_SERVERS).toBeUndefined();
    expect(loadConfig({}).WEBHOOK_DNS_TIMEOUT_MS).toBe(5000);
    expect(
      loadConfig({ WEBHOOK_DNS_SERVERS: '127.0.0.1:5353, 10.0.0.2,[::1]:53,2001:db8::1' })
        .WEBHOOK_DNS_SERVERS,
    ).toEqual(['127.0.0.1:5353', '10.0.0.2', '[::1]:53', '2001:db8::1']);
    expect(() => loadConfig({ WEBHOOK_DNS_SERVERS: 'dns.example.com' })).toThrow(
      /^Invalid environment variable WEBHOOK_DNS_SERVERS/,
    );
  });

  it('reads a Redis Cluster or Sentinel as host:port lists, and refuses what is not one', () => {
    const c = loadConfig({ REDIS_CLUSTER_NODES: '10.0.0.1:7000, redis-b.internal:7001,[::1]:7002' });
    expect(c.REDIS_CLUSTER_NODES).toEqual([
      { host: '10.0.0.1', port: 7000 },
      { host: 'redis-b.internal', port: 7001 },
      { host: '::1', port: 7002 },
    ]);
    expect(loadConfig({}).REDIS_CLUSTER_NODES).toBeUndefined();
    const s = loadConfig({ REDIS_SENTINELS: 's1:26379,s2:26379', REDIS_SENTINEL_NAME: 'stampcard' });
    expect(s.REDIS_SENTINELS).toEqual([
      { host: 's1', port: 26379 },
      { host: 's2', port: 26379 },
    ]);
    expect(s.REDIS_SENTINEL_NAME).toBe('stampcard');
    for (const bad of ['redis-a', 'a:0', 'a:70000', 'a:7000,b', ' , ', `a:1,${'x'.repeat(300)}:2`]) {
      expect(() => loadConfig({ REDIS_CLUSTER_NODES: bad })).toThrow(/REDIS_CLUSTER_NODES/);
    }
    expect(() => loadConfig({ REDIS_SENTINELS: 'nope' })).toThrow(/REDIS_SENTINELS: "nope" is not host:port/);
  });

  it('behind a pooler in transaction mode, requires PostgreSQL itself as DATABASE_DIRECT_URL', () => {
    expect(loadConfig({}).DATABASE_POOLER).toBe('none');
    expect(() => loadConfig({ DATABASE_POOLER: 'transaction' })).toThrow(/DATABASE_DIRECT_URL: required/);
    const c = loadConfig({
      DATABASE_URL: 'postgres://app@pgbouncer:6432/stampcard',
      DATABASE_POOLER: 'transaction',
      DATABASE_DIRECT_URL: 'postgres://app@db:5432/stampcard',
    });
    expect(directDatabaseUrl(c)).toBe('postgres://app@db:5432/stampcard');
    expect(directDatabaseUrl(loadConfig({}))).toBe(loadConfig({}).DATABASE_URL);
    expect(() => loadConfig({ DATABASE_POOLER: 'session' })).toThrow(/DATABASE_POOLER/);
  });

  it('takes a read replica by DATABASE_READ_URL, with its lag bound', () => {
    expect(loadConfig({}).DATABASE_READ_URL).toBeUndefined();
    expect(loadConfig({}).DATABASE_READ_MAX_LAG_MS).toBe(5000);
    const c = loadConfig({
      DATABASE_READ_URL: 'postgres://app@replica:5432/stampcard',
      DATABASE_READ_MAX_LAG_MS: '2000',
    });
    expect(c.DATABASE_READ_URL).toBe('postgres://app@replica:5432/stampcard');
    expect(c.DATABASE_READ_MAX_LAG_MS).toBe(2000);
    expect(() => loadConfig({ DATABASE_READ_URL: 'replica' })).toThrow(/DATABASE_READ_URL/);
    expect(() => loadConfig({ DATABASE_READ_MAX_LAG_MS: '-1' })).toThrow(/DATABASE_READ_MAX_LAG_MS/);
  });

  it('requires OPERATOR_TOKEN in production', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(ConfigError);
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(
      /^Invalid environment variable OPERATOR_TOKEN: required in production/,
    );
    expect(
      loadConfig({ NODE_ENV: 'production', OPERATOR_TOKEN: 'x'.repeat(16) }).operatorTokenGenerated,
    ).toBe(false);
  });

  it('names every invalid variable at once', () => {
    let message = '';
    try {
      loadConfig({
        PORT: 'eighty',
        DATABASE_URL: 'not a url',
        OPERATOR_TOKEN: 'short',
        WORKER_CONCURRENCY: '0',
      });
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      message = (err as Error).message;
    }
    // One line per variable, each naming it, none echoing the value (a token may be a secret).
    const lines = message.split('\n');
    expect(lines).toHaveLength(4);
    for (const name of ['PORT', 'DATABASE_URL', 'OPERATOR_TOKEN', 'WORKER_CONCURRENCY'])
      expect(lines.some((l) => l.startsWith(`Invalid environment variable ${name}:`))).toBe(true);
    expect(message).not.toContain('short');
    expect(message).not.toContain('eighty');
  });

  it('a migration needs only DATABASE_URL, also in production', () => {
    expect(loadDatabaseConfig({ NODE_ENV: 'production', DATABASE_URL: 'postgres://db/x' })).toEqual({
      DATABASE_URL: 'postgres://db/x',
    });
    expect(() => loadDatabaseConfig({ DATABASE_URL: 'nope' })).toThrow(
      /^Invalid environment variable DATABASE_URL:/,
    );
  });
});

describe('keepOperatorToken', () => {
  const dir = mkdtempSync(join(tmpdir(), 'stampcard-token-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const fileMode = (file: string) => statSync(file).mode & 0o777;

  it('makes the file on the first start, readable by its owner only, and every later start uses its token', () => {
    const file = join(dir, 'first', '.stampcard', 'operator-token');
    const first = keepOperatorToken(loadConfig({ OPERATOR_TOKEN_FILE: file }));
    expect(first.OPERATOR_TOKEN).toMatch(/^op_[0-9a-f]{48}$/);
    expect(first).toMatchObject({ operatorTokenGenerated: true, operatorTokenFile: file });
    expect(readFileSync(file, 'utf8').trim()).toBe(first.OPERATOR_TOKEN);
    expect(fileMode(file)).toBe(0o600);
    expect(statSync(join(dir, 'first', '.stampcard')).mode & 0o077).toBe(0);
    // loadConfig alone generates another token each time; the file keeps the first.
    const second = keepOperatorToken(loadConfig({ OPERATOR_TOKEN_FILE: file }));
    expect(second.OPERATOR_TOKEN).toBe(first.OPERATOR_TOKEN);
  });

  it('uses the environment token when one is set, and neither reads nor makes the file', () => {
    const file = join(dir, 'env', 'operator-token');
    const cfg = keepOperatorToken(
      loadConfig({ OPERATOR_TOKEN: 'a-long-enough-token', OPERATOR_TOKEN_FILE: file }),
    );
    expect(cfg).toMatchObject({ OPERATOR_TOKEN: 'a-long-enough-token', operatorTokenGenerated: false });
    expect(cfg.operatorTokenFile).toBeUndefined();
    expect(statSync(file, { throwIfNoEntry: false })).toBeUndefined();
  });

  it("makes a token file others could read its owner's only", () => {
    const file = join(dir, 'open-token');
    writeFileSync(file, 'op_an_operator_token_kept_by_hand\n', { mode: 0o644 });
    const cfg = keepOperatorToken(loadConfig({ OPERATOR_TOKEN_FILE: file }));
    expect(cfg.OPERATOR_TOKEN).toBe('op_an_operator_token_kept_by_hand');
    expect(fileMode(file)).toBe(0o600);
  });

  it('refuses a file that holds no token, and one it cannot write, naming the file and what to do', () => {
    const file = join(dir, 'short-token');
    writeFileSync(file, 'short\n', { mode: 0o600 });
    expect(() => keepOperatorToken(loadConfig({ OPERATOR_TOKEN_FILE: file }))).toThrow(ConfigError);
    expect(() => keepOperatorToken(loadConfig({ OPERATOR_TOKEN_FILE: file }))).toThrow(
      `${file} does not hold an operator token (16 or more characters, no spaces): delete it`,
    );
    // A folder where the file should be: it can be neither read nor made.
    const blocked = join(dir, 'short-token', 'operator-token');
    expect(() => keepOperatorToken(loadConfig({ OPERATOR_TOKEN_FILE: blocked }))).toThrow(
      /^Cannot keep the operator token in .*short-token\/operator-token \(ENOTDIR\): set OPERATOR_TOKEN/,
    );
  });
});

describe('log format', () => {
  it('is JSON by default and in production, pretty when NODE_ENV=development or LOG_FORMAT=pretty', () => {
    expect(loadConfig({}).LOG_FORMAT).toBe('json');
    expect(loadConfig({ NODE_ENV: 'test' }).LOG_FORMAT).toBe('json');
    expect(loadConfig({ NODE_ENV: 'production', OPERATOR_TOKEN: 'x'.repeat(16) }).LOG_FORMAT).toBe('json');
    expect(loadConfig({ NODE_ENV: 'development' }).LOG_FORMAT).toBe('pretty');
    expect(loadConfig({ LOG_FORMAT: 'pretty' }).LOG_FORMAT).toBe('pretty');
    expect(loadConfig({ NODE_ENV: 'development', LOG_FORMAT: 'json' }).LOG_FORMAT).toBe('json');
    expect(() => loadConfig({ LOG_FORMAT: 'yaml' })).toThrow(/^Invalid environment variable LOG_FORMAT/);
    expect(() =>
      loadConfig({ NODE_ENV: 'production', OPERATOR_TOKEN: 'x'.repeat(16), LOG_FORMAT: 'pretty' }),
    ).toThrow('Invalid environment variable LOG_FORMAT: pretty is for development; production logs are JSON');
  });

  const collect = () => {
    let out = '';
    const stream = new Writable({
      write(chunk, _encoding, done) {
        out += chunk;
        done();
      },
    });
    return { stream, output: () => out };
  };

  it('pretty lines are readable, not JSON, and keep the same safe fields (no error message)', () => {
    const json = collect();
    createLogger({ level: 'info', name: 'stampcard', destination: json.stream }).info(
      { port: 3000 },
      'listening',
    );
    expect(JSON.parse(json.output())).toMatchObject({
      level: 30,
      msg: 'listening',
      port: 3000,
      service: 'stampcard',
    });

    const pretty = collect();
    const logger = createLogger({
      level: 'info',
      name: 'stampcard',
      format: 'pretty',
      destination: pretty.stream,
    });
    logger.info({ port: 3000 }, 'listening');
    logger.error({ err: new Error('ada@example.com not found') }, 'lookup failed');
    const text = pretty.output();
    expect(() => JSON.parse(text.split('\n')[0]!)).toThrow();
    expect(text).toMatch(/INFO.*listening/);
    expect(text).toMatch(/port: 3000/);
    expect(text).toMatch(/ERROR.*lookup failed/);
    expect(text).toMatch(/"type": "Error"/);
    expect(text).not.toContain('ada@example.com');
  });
});
