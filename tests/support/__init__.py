"""Test harness support: throwaway PostgreSQL, loopback S3 and live uvicorn servers."""
