-- Two indexes rebuilt with conditions that keep the fan-out's look-ups off them. With statistics taken while few
-- events were in flight or few messages pending, the planner took the sweep's index of undispatched events for
-- the look-ups by id and by participant, and the index of every pending message by due time for a pair's
-- ordered messages, reading all of them each time. The sweep's index gets `seq > 0` (true of every row), which
-- only the sweep states; the index of pending ordered messages gets `(status || '') = 'PENDING'`, which only a
-- pair's look-up states. Building them reads events and webhook_messages once each, holding writes to them
-- meanwhile (docs/operating.md, "Upgrading").
DROP INDEX "events_undispatched_idx";--> statement-breakpoint
DROP INDEX "webhook_messages_ordered_idx";--> statement-breakpoint
CREATE INDEX "events_undispatched_idx" ON "events" USING btree ("seq") WHERE "events"."dispatched_at" is null and "events"."seq" > 0;--> statement-breakpoint
CREATE INDEX "webhook_messages_ordered_idx" ON "webhook_messages" USING btree ("endpoint_id","participant_id","sequence") WHERE ("webhook_messages"."status" || '') = 'PENDING' and "webhook_messages"."ordered";