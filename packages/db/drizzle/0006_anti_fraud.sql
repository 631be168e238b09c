CREATE TABLE "ip_throttles" (
	"campaign_id" text NOT NULL,
	"ip_address" text NOT NULL,
	"window_start" timestamp with time zone NOT NULL,
	"count" integer NOT NULL,
	"blocked_until" timestamp with time zone,
	CONSTRAINT "ip_throttles_campaign_id_ip_address_pk" PRIMARY KEY("campaign_id","ip_address")
);
--> statement-breakpoint
ALTER TABLE "participants" ADD COLUMN "email_key" text;--> statement-breakpoint
ALTER TABLE "ip_throttles" ADD CONSTRAINT "ip_throttles_campaign_id_campaigns_id_fk" FOREIGN KEY ("campaign_id") REFERENCES "public"."campaigns"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "participants_email_key_idx" ON "participants" USING btree ("campaign_id","email_key");--> statement-breakpoint
CREATE INDEX "participants_fingerprint_idx" ON "participants" USING btree ("campaign_id","fingerprint") WHERE "participants"."fingerprint" is not null;--> statement-breakpoint
-- Participants written before email_key existed: the same normalisation as emailKey() in core (NFKC, trim, lower
-- case, no +tag, no dots at gmail.com and googlemail.com).
UPDATE "participants" AS p SET "email_key" = CASE
    WHEN k.domain IN ('gmail.com', 'googlemail.com') THEN replace(k.local, '.', '') || '@gmail.com'
    ELSE k.local || '@' || k.domain
  END
FROM (
  SELECT id,
    regexp_replace(regexp_replace(v, '@[^@]*$', ''), '^(.+?)\+.*$', '\1') AS local,
    regexp_replace(v, '^.*@', '') AS domain
  FROM (SELECT id, lower(trim(normalize("email", NFKC))) AS v FROM "participants" WHERE "email_key" IS NULL) AS raw
) AS k
WHERE p.id = k.id;
