import { describe, expect, it } from 'vitest';
import { eraseParticipant, participantsShown, shownData } from '../src/rules/erasure';

const person = (id: string, email: string) => ({
  id,
  email,
  firstName: 'Ada',
  lastName: 'Lovelace',
  notes: 'likes tea',
  metadata: { phone: '555' },
  loyaltyActionCount: 3,
  rewards: [{ id: 'prew_1', participantId: id, approved: true }],
});

describe('erasure rules', () => {
  it("scrubs the participant's personal fields wherever it appears, and keeps ids and counts", () => {
    const data = {
      participant: person('p1', 'ada@example.com'),
      formSubmission: {
        id: 'fsub_1',
        participantId: 'p1',
        participantEmail: 'ada@example.com',
        formData: { a: 'x' },
      },
      campaign: { id: 'c1', name: 'Coffee' },
    };
    const before = structuredClone(data);
    const { value, changed } = eraseParticipant(data, 'p1');
    expect(changed).toBe(true);
    expect(data).toEqual(before);
    expect(value).toEqual({
      participant: {
        ...before.participant,
        email: '',
        firstName: null,
        lastName: null,
        notes: null,
        metadata: {},
      },
      formSubmission: { id: 'fsub_1', participantId: 'p1', participantEmail: '', formData: {} },
      campaign: { id: 'c1', name: 'Coffee' },
    });
    expect(eraseParticipant(value, 'p1')).toEqual({ value, changed: false });
  });

  it("leaves other participants' data as it is", () => {
    const page = { participants: [person('p1', 'a@example.com'), person('p2', 'b@example.com')] };
    const { value } = eraseParticipant(page, 'p1');
    expect((value as typeof page).participants[1]).toEqual(page.participants[1]);
    expect((value as typeof page).participants[0]!.email).toBe('');
    expect(eraseParticipant(page, 'p3')).toEqual({ value: page, changed: false });
  });

  it('names the participants an answer shows, by a view with an email or by participantId, bounded', () => {
    expect(participantsShown({ participant: person('p1', 'a@example.com') })).toEqual(['p1']);
    expect(participantsShown({ action: { id: 'act_1', participantId: 'p2' } })).toEqual(['p2']);
    expect(participantsShown({ success: true })).toEqual([]);
    expect(participantsShown(undefined)).toEqual([]);
    const many = Array.from({ length: 150 }, (_, i) => person(`p${i}`, `${i}@example.com`));
    expect(participantsShown(many)).toHaveLength(100);
  });

  it('shows stored data as stored, or erased while its participant is being erased', () => {
    const data = { participant: person('p1', 'ada@example.com'), campaign: { id: 'c1' } };
    expect(shownData(data, null)).toBe(data);
    const shown = shownData(data, 'p1');
    expect(shown.participant).toMatchObject({ id: 'p1', email: '', firstName: null, loyaltyActionCount: 3 });
    expect(data.participant.email).toBe('ada@example.com');
    // Another participant's erasure leaves it as it is.
    expect(shownData(data, 'p2')).toBe(data);
  });
});
