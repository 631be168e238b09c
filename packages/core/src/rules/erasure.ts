/**
 * Right to erasure: what of a deleted participant is scrubbed from the JSON Stampcard keeps after it (stored
 * events, which webhook messages are built from, and stored `Idempotency-Key` answers). Ids, counts,
 * statuses and times stay, so the ledger still adds up; the person's email, names, notes, metadata and form
 * answers go. The shapes it recognises are those of `views.ts`: a Participant (`id` and `email`) and
 * anything naming the participant by `participantId` (a FormSubmission's `participantEmail` and `formData`).
 */

/** What an erased email reads: still a string, as the schemas of past events say it is. */
export const ERASED_EMAIL = '';

/** A Participant's personal fields, as erasure leaves them (also merged into stored events by SQL). */
export const ERASED_PARTICIPANT = {
  email: ERASED_EMAIL,
  firstName: null,
  lastName: null,
  notes: null,
  metadata: {},
};
/**
 * A participant's personal columns as the audit log records them (its `before` and `after` hold the row's
 * columns), as erasure leaves them.
 */
export const ERASED_PARTICIPANT_COLUMNS = {
  email: ERASED_EMAIL,
  first_name: null,
  last_name: null,
  notes: null,
  metadata: {},
  ip_address: null,
  fingerprint: null,
};
/** A FormSubmission's personal fields, as erasure leaves them (also merged into stored events by SQL). */
export const ERASED_SUBMISSION = { participantEmail: ERASED_EMAIL, formData: {} };

/**
 * `value` with every trace of participant `participantId` scrubbed, and whether anything changed. Pure: the
 * value given is not modified. Other participants' data is left as it is.
 */
export function eraseParticipant(
  value: unknown,
  participantId: string,
): { value: unknown; changed: boolean } {
  let changed = false;
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (typeof v !== 'object' || v === null) return v;
    const out: Record<string, unknown> = {};
    for (const [k, inner] of Object.entries(v)) out[k] = walk(inner);
    const scrub = (fields: Record<string, unknown>) => {
      for (const [k, erased] of Object.entries(fields)) {
        if (!Object.hasOwn(out, k)) continue;
        if (JSON.stringify(out[k]) !== JSON.stringify(erased)) changed = true;
        out[k] = erased;
      }
    };
    if (out.id === participantId && Object.hasOwn(out, 'email')) scrub(ERASED_PARTICIPANT);
    if (out.participantId === participantId) scrub(ERASED_SUBMISSION);
    return out;
  };
  const scrubbed = walk(value);
  return { value: changed ? scrubbed : value, changed };
}

/**
 * Stored event data as it may be shown (the event feed) or sent (a webhook message): without participant
 * `erasing` when its erasure is still running, so that what the background has not reached yet is never shown
 * or sent after the deletion. `erasing` null: the data as stored.
 */
export function shownData<T>(data: T, erasing: string | null): T {
  // Same shape: erasure replaces values of fields that are there, and adds none.
  return erasing === null ? data : (eraseParticipant(data, erasing).value as T);
}

/**
 * The participants an answer shows (a Participant's `id`, any `participantId`), so a stored answer can be
 * found again when one of them is erased. At most `max`: an answer naming more is found by its first ones.
 */
export function participantsShown(value: unknown, max = 100): string[] {
  const found = new Set<string>();
  const walk = (v: unknown) => {
    if (found.size >= max || typeof v !== 'object' || v === null) return;
    if (Array.isArray(v)) {
      for (const x of v) walk(x);
      return;
    }
    const o = v as Record<string, unknown>;
    if (typeof o.id === 'string' && Object.hasOwn(o, 'email')) found.add(o.id);
    if (typeof o.participantId === 'string') found.add(o.participantId);
    for (const x of Object.values(o)) walk(x);
  };
  walk(value);
  return [...found].slice(0, max);
}
