CREATE INDEX "loyalty_actions_created_idx" ON "loyalty_actions" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "loyalty_actions_applied_idx" ON "loyalty_actions" USING btree ("applied_at") WHERE "loyalty_actions"."applied_at" is not null;--> statement-breakpoint
CREATE INDEX "webhook_attempts_attempted_idx" ON "webhook_attempts" USING btree ("attempted_at");--> statement-breakpoint
CREATE INDEX "webhook_endpoints_failing_idx" ON "webhook_endpoints" USING btree ("failing_since") WHERE "webhook_endpoints"."failing_since" is not null and "webhook_endpoints"."deleted_at" is null;