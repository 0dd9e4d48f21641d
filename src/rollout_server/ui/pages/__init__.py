"""One module per area of the UI; each has a `router` of page and partial routes."""
