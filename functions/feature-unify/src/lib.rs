//! # squall-feature-unify
//!
//! This crate has no code. The function crates (and the `squall` command)
//! depend on it so that building one of them alone — `cargo lambda watch`
//! runs `cargo run --bin worker` — resolves the features of every dependency
//! exactly as `cargo build --workspace` and `cargo test --workspace` do, and
//! so reuses the dependencies those builds compiled instead of compiling
//! DataFusion again with a slightly different feature set. Its `Cargo.toml`
//! says how the list is made; `infra/ci/check-feature-unify.sh` checks it.
