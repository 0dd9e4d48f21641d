# Rollout server image. Used by docker-compose.yml; `make run` needs no container at all.
FROM node:20-slim AS web
WORKDIR /web
COPY web/package.json web/package-lock.json ./
RUN npm ci --no-audit --no-fund --loglevel=error

FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md alembic.ini ./
COPY src ./src
COPY migrations ./migrations
COPY web ./web
COPY --from=web /web/node_modules ./web/node_modules
RUN pip install --no-cache-dir -e .
ENV ROLLOUT_HOST=0.0.0.0 ROLLOUT_PORT=8000 ROLLOUT_DATA_DIR=/data
EXPOSE 8000
CMD ["rollout-server", "serve"]
