# Rollout server image. Used by docker-compose.yml; `make run` needs no container at all.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md alembic.ini ./
COPY src ./src
COPY migrations ./migrations
COPY web ./web
RUN pip install --no-cache-dir -e .
ENV ROLLOUT_HOST=0.0.0.0 ROLLOUT_PORT=8000 ROLLOUT_DATA_DIR=/data
EXPOSE 8000
CMD ["rollout-server", "serve"]
