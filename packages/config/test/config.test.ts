import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/index';

describe('loadConfig', () => {
  it('gives every setting its default on an empty environment, with a generated operator token', () => {
    const cfg = loadConfig({});
    expect(cfg).toMatchObject({
      NODE_ENV: 'development',
      DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/stampcard',
      REDIS_URL: 'redis://127.0.0.1:6379',
      PORT: 3000,
      QUEUE_PREFIX: 'stampcard',
      WORKER_CONCURRENCY: 64,
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

  it('requires OPERATOR_TOKEN in production', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(ConfigError);
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(/OPERATOR_TOKEN: required in production/);
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
    for (const name of ['PORT', 'DATABASE_URL', 'OPERATOR_TOKEN', 'WORKER_CONCURRENCY'])
      expect(message).toContain(name);
  });
});
