import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, loadDatabaseConfig } from '../src/index';

describe('loadConfig', () => {
  it('gives every setting its default on an empty environment, with a generated operator token', () => {
    const cfg = loadConfig({});
    expect(cfg).toMatchObject({
      NODE_ENV: 'development',
      DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/stampcard',
      REDIS_URL: 'redis://127.0.0.1:6379',
      PORT: 3000,
      QUEUE_PREFIX: 'stampcard',
      WORKER_CONCURRENCY: 256,
      WORKER_BATCH_SIZE: 64,
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
