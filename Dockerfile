# Switchyard gateway image: build stage compiles TypeScript; the runtime stage holds only
# production dependencies and dist/, runs as the unprivileged `node` user, and keeps its state
# (the SQLite file) in the /data volume.
#   docker build -t switchyard .
#   docker run -p 8080:8080 -v switchyard-data:/data switchyard serve --upstream http://host.docker.internal:8000/v1

FROM node:20-slim AS build
WORKDIR /app
# better-sqlite3 compiles from source when no prebuilt binary matches
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev

FROM node:20-slim
ENV NODE_ENV=production \
    SWITCHYARD_HOST=0.0.0.0 \
    SWITCHYARD_PORT=8080 \
    SWITCHYARD_DATA_DIR=/data
WORKDIR /app
COPY --from=build --chown=root:root /app/package.json ./
COPY --from=build --chown=root:root /app/node_modules ./node_modules
COPY --from=build --chown=root:root /app/dist ./dist
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s CMD node -e "fetch('http://127.0.0.1:'+(process.env.SWITCHYARD_PORT||8080)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
# node is PID 1's only child of tini-less exec form: signals reach the server directly
ENTRYPOINT ["node", "dist/cli.js"]
CMD ["serve"]
