"""What crosses the HTTP edge: request models (pydantic, validated once at the edge) and the
names of the headers the gateway reads and writes."""
