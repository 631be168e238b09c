/** A setting that cannot be used: its message names it, never its value, and says what to do. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}
