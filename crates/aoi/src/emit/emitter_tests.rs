//! Unit tests for the emitter and the harness core.
