"""Files: uploads, metadata and downloads of content-addressed bytes."""
