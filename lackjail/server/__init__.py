"""The user's resident controller that `lackjail run` hands its commands to: `client` (the thin
command), `serve` (the server), `wire` (what they say), `place` (where it listens)."""
