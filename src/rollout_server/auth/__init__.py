"""Authentication: API keys (hashed), passwords (argon2), and the request dependencies that use them."""
