CREATE TABLE "console_sign_outs" (
	"session_id" text PRIMARY KEY NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "console_sign_outs_expires_idx" ON "console_sign_outs" USING btree ("expires_at");