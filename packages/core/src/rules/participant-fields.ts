import { z } from 'zod';

/**
 * A participant's fields and their bounds (contract section 1), wherever a participant comes from: the API's
 * bodies (which add their OpenAPI descriptions to these) and an import's rows, read by the worker.
 */
export const emailSchema = z.email({ message: 'must be an email address' }).max(254);
export const nameSchema = z.string().max(255);
export const notesSchema = z.string().max(10_000);
export const fingerprintSchema = z.string().max(255);

const metadataValue = z.union([z.string(), z.number(), z.boolean(), z.null()], {
  message: 'metadata is shallow: values are strings, numbers, booleans or null',
});

/** The bounds of `metadata` (contract section 1). */
export const METADATA_MAX_KEYS = 100;
export const METADATA_MAX_BYTES = 16 * 1024;

export const metadataSchema = z
  .record(z.string().min(1).max(255), metadataValue)
  .refine((m) => Object.keys(m).length <= METADATA_MAX_KEYS, {
    message: `metadata has at most ${METADATA_MAX_KEYS} keys`,
  })
  .refine((m) => Buffer.byteLength(JSON.stringify(m)) <= METADATA_MAX_BYTES, {
    message: 'metadata is at most 16 KiB as JSON',
  });

/** An IPv4 or IPv6 address, as anti-fraud checks it. */
export const ipv4Schema = z.ipv4();
export const ipv6Schema = z.ipv6();
export const IP_ADDRESS_MESSAGE = 'must be an IPv4 or IPv6 address';
export const ipAddressSchema = z.union([ipv4Schema, ipv6Schema], { message: IP_ADDRESS_MESSAGE });

/** Why PostgreSQL (or any JSON consumer) would refuse this string, if it would. */
export function badStringReason(s: string): string | null {
  if (s.includes('\u0000')) return 'must not contain the NUL character (\\u0000)';
  if (!s.isWellFormed()) return 'must not contain an unpaired UTF-16 surrogate';
  return null;
}
