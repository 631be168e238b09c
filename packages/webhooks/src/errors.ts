export const VERIFICATION_FAILURES = [
  'MISSING_HEADERS',
  'INVALID_TIMESTAMP',
  'TIMESTAMP_TOO_OLD',
  'TIMESTAMP_TOO_NEW',
  'NO_MATCHING_SIGNATURE',
  'INVALID_SECRET',
  'INVALID_BODY',
] as const;
export type VerificationFailure = (typeof VERIFICATION_FAILURES)[number];

/** The one error `verify` throws; `reason` says which check failed, for the receiver's logs and answer. */
export class WebhookVerificationError extends Error {
  override name = 'WebhookVerificationError';
  constructor(
    readonly reason: VerificationFailure,
    message: string,
  ) {
    super(message);
  }
}
