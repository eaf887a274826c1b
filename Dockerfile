# syntax=docker/dockerfile:1
# magma-gateway image. The same image runs the gateway (default) and the demo agents:
#   docker run -p 8888:8888 -e AGENT_URL=http://host.docker.internal:8101 \
#     --add-host host.docker.internal:host-gateway magma-gateway    # one backend, config/gateway.standalone.yaml
#   docker run -p 8888:8888 -v $PWD/my.yaml:/app/config/my.yaml:ro magma-gateway --config config/my.yaml
#   docker run --entrypoint node magma-gateway dist/demo/agents/talker.js --host 0.0.0.0 --port 8101
# docker-compose.yml wires it up with Redis, the demo agents, Prometheus and Grafana (config/gateway.docker.yaml).
# The entrypoint is node itself (no npm, no shell), so SIGTERM reaches the gateway and it drains before exiting.
# No node flags and no malloc variables: the gateway sets its V8 heap growth itself (docs/performance.md#v8-flags),
# so it runs the same here as under `npm start`. deploy/kubernetes and docker-compose.yml run the same command.

# ---- build: compile TypeScript (tsc -> dist/) with the dev dependencies ----
FROM node:24-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
# Everything tsconfig.json compiles (src, demo, test, bench); .dockerignore keeps node_modules/ and dist/ out.
COPY . .
RUN npm run build

# ---- runtime: production dependencies and compiled JavaScript only ----
FROM node:24-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
# package.json stays next to dist/: the gateway reads its version from it (agent_version in /v1/info).
COPY --from=build /app/dist ./dist
COPY config ./config
# Files stay owned by root (read-only for the process); the process runs as the image's unprivileged user.
USER node
# 8888: the agent port; 9901: the admin listener (admin.listen in config/gateway.docker.yaml).
EXPOSE 8888 9901
# Ready = every route has a ready backend (GET /health answers 200). Demo agent containers override this.
HEALTHCHECK --interval=10s --timeout=3s --start-period=15s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:8888/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "dist/src/cli.js"]
CMD ["--config", "config/gateway.standalone.yaml"]
