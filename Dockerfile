# One image for every Stampcard process; the command picks the role (see docker-compose.yml).
# Node.js 20: the line package.json declares (engines), @types/node describes and the tests run on.

# What both installs below start from: every workspace's package.json, so a dependency layer is rebuilt
# only when they change (test/packaging.test.ts checks that none is missing), and patches/.
FROM node:20-slim AS manifests
WORKDIR /app
COPY package.json package-lock.json ./
COPY apps/api/package.json apps/api/
COPY apps/dispatcher/package.json apps/dispatcher/
COPY apps/worker/package.json apps/worker/
COPY packages/client/package.json packages/client/
COPY packages/config/package.json packages/config/
COPY packages/core/package.json packages/core/
COPY packages/db/package.json packages/db/
COPY packages/jobs/package.json packages/jobs/
COPY packages/telemetry/package.json packages/telemetry/
COPY packages/webhooks/package.json packages/webhooks/
COPY patches ./patches

# Every dependency and the sources, then `npm run build`. --ignore-scripts keeps every dependency's install
# scripts from running; the project's own postinstall, which applies patches/ (the PostgreSQL driver's fix,
# packages/db/README.md), is then run by name and fails the build when a patch no longer applies.
FROM manifests AS build
RUN npm ci --ignore-scripts && npm run postinstall
COPY tsconfig.json turbo.json ./
COPY apps ./apps
COPY packages ./packages
COPY scripts ./scripts
# What runs: the root's dist/ (start.js and its roles), each workspace's dist/, and the migrations.
RUN npm run build && mkdir /out && cp -r --parents dist apps/*/dist packages/*/dist packages/db/drizzle /out/

# The image: production dependencies (the patch applied the same way) and the build; no sources, no tsx.
FROM manifests
ENV NODE_ENV=production
# Inside a container the API listens on every interface (Compose publishes its port on 127.0.0.1 only);
# outside one, `npm start` listens on 127.0.0.1 unless HOST says otherwise.
ENV HOST=0.0.0.0
RUN npm ci --omit=dev --ignore-scripts && npm run postinstall && npm cache clean --force
COPY --from=build /out ./
USER node
EXPOSE 3000
CMD ["node", "dist/start.js", "all"]
