# Container image of the `gitmesh` command, used by both Helm charts (`gitmesh server`, `gitmesh agent`).
#   docker build -t ghcr.io/gitmesh/gitmesh:0.1.0 .
# The runtime image holds compiled JavaScript (dist/) and production node_modules only; bin/gitmesh.js
# runs dist/cli/main.js because src/ is absent. Development code is not built into dist/ (tsconfig.build.json
# excludes src/devtools, src/kube-emulator and the `demo` and `kube-emulator` commands, which then say they
# are development commands): the image holds no Git server, TCP balancer or API emulator. It runs as
# UID/GID 10001, the user the charts' securityContext names, and needs no writable path but /tmp (an
# emptyDir in the charts).

FROM node:20-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
COPY tools/msgpackr-extract-stub ./tools/msgpackr-extract-stub
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY web ./web
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

FROM node:20-slim AS runtime
# The commit the image is built from, reported as gitmesh_build_info{commit} (docker build --build-arg GITMESH_COMMIT=$(git rev-parse HEAD)).
ARG GITMESH_COMMIT=unknown
ENV NODE_ENV=production GITMESH_COMMIT=$GITMESH_COMMIT
WORKDIR /app
RUN groupadd --gid 10001 gitmesh \
 && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin gitmesh
COPY --from=build /src/package.json ./package.json
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/tools/msgpackr-extract-stub ./tools/msgpackr-extract-stub
COPY --from=build /src/dist ./dist
COPY bin ./bin
RUN ln -s /app/bin/gitmesh.js /usr/local/bin/gitmesh && chmod 0755 /app/bin/gitmesh.js
USER 10001:10001
# 9900 relay (gRPC) and 9091 HTTP of the server; 9977 HTTP of the agent.
EXPOSE 9900 9091 9977
ENTRYPOINT ["gitmesh"]
CMD ["--help"]
