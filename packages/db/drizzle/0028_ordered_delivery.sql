-- Ordered delivery per participant: the endpoint option, the messages made under it (ordered, and the id of a
-- dead-lettered predecessor), and the index of the ordered messages still to send (none on a new database).
ALTER TABLE "webhook_endpoints" ADD COLUMN "ordering" text DEFAULT 'NONE' NOT NULL;--> statement-breakpoint
ALTER TABLE "webhook_messages" ADD COLUMN "ordered" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "webhook_messages" ADD COLUMN "previous_id" text;--> statement-breakpoint
CREATE INDEX "webhook_messages_ordered_idx" ON "webhook_messages" USING btree ("endpoint_id","participant_id","sequence") WHERE "webhook_messages"."status" = 'PENDING' and "webhook_messages"."ordered";