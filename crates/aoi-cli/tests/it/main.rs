//! End-to-end tests of the `aoi` binary, run as a real process on real pipes.

mod consumer;
mod harness;
mod lint;
mod lint_corpus;
mod lint_robust;
mod lint_strangers;
mod lint_targets;
mod mcp;
mod mcp_calls;
mod mcp_catalog;
mod mcp_clients;
mod mcp_conformance;
mod mcp_coreutils;
mod mcp_hostile_ts;
mod mcp_protocol;
mod mcp_python_example;
mod mcp_python_sdk;
mod memory;
mod pipeline;
mod support;
mod tools;
mod verify;
