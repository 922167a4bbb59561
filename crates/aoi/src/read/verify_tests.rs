//! Unit tests for the verifier: one per rule.
