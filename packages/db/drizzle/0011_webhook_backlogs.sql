ALTER TABLE "webhook_endpoints" ADD COLUMN "deleted_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD COLUMN "backlog_kind" text;--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD COLUMN "backlog_state" text;--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD COLUMN "backlog_operation" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD COLUMN "backlog_total" integer;--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD COLUMN "backlog_done" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD COLUMN "backlog_batches" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD COLUMN "backlog_started_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD COLUMN "backlog_finished_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD COLUMN "backlog_touched_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD COLUMN "backlog_cursor_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD COLUMN "backlog_cursor_id" text;--> statement-breakpoint
CREATE INDEX "webhook_endpoints_backlog_idx" ON "webhook_endpoints" USING btree ("backlog_touched_at") WHERE "webhook_endpoints"."backlog_state" = 'RUNNING';--> statement-breakpoint
CREATE INDEX "webhook_messages_pending_idx" ON "webhook_messages" USING btree ("endpoint_id","created_at","id") WHERE "webhook_messages"."status" = 'PENDING';