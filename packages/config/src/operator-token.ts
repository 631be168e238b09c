import { chmodSync, linkSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { ConfigError } from './errors';

function readToken(file: string): string {
  // Anyone else on the machine could read a token left group- or world-readable: only its owner may.
  if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
  const token = readFileSync(file, 'utf8').trim();
  if (token.length < 16 || /\s/.test(token)) {
    throw new ConfigError(
      `${file} does not hold an operator token (16 or more characters, no spaces): delete it, and the next start makes a new one`,
    );
  }
  return token;
}

/** What `keepOperatorToken` reads of a config (the `Config` itself, without importing it). */
type TokenConfig = { OPERATOR_TOKEN: string; OPERATOR_TOKEN_FILE: string; operatorTokenGenerated?: boolean };

/**
 * `config` with an operator token that stays the same from one start to the next when the environment sets
 * none: the one in `OPERATOR_TOKEN_FILE` when that file exists, else the token `loadConfig` generated, written
 * there first (the file mode 0600, its folder 0700; written whole under a temporary name, then linked into
 * place, so two processes starting at once agree on one token). A token from the environment wins: it is
 * used as it is, and the file is neither read nor made.
 */
export function keepOperatorToken<C extends TokenConfig>(config: C): C & { operatorTokenFile?: string } {
  if (!config.operatorTokenGenerated) return config;
  try {
    return { ...config, ...tokenFromFile(config.OPERATOR_TOKEN_FILE, config.OPERATOR_TOKEN) };
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    const code = (err as NodeJS.ErrnoException).code ?? 'an error';
    throw new ConfigError(
      `Cannot keep the operator token in ${config.OPERATOR_TOKEN_FILE} (${code}): set OPERATOR_TOKEN, or OPERATOR_TOKEN_FILE to a file this user may write`,
    );
  }
}

function tokenFromFile(file: string, generated: string) {
  if (statSync(file, { throwIfNoEntry: false }))
    return { operatorTokenFile: file, OPERATOR_TOKEN: readToken(file) };
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, `${generated}\n`, { mode: 0o600 });
  try {
    linkSync(temporary, file);
    return { operatorTokenFile: file, OPERATOR_TOKEN: generated };
  } catch (err) {
    // Another process made it first: its token is the one.
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return { operatorTokenFile: file, OPERATOR_TOKEN: readToken(file) };
  } finally {
    rmSync(temporary, { force: true });
  }
}
