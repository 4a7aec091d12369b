"""Where runs happen: `docker` (the engine, through the Docker SDK) and, later, `local`."""
