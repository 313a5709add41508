//! A plan and an apply's report written down: Terraform-like text and reconcile's JSON
//! ([`plan`]), the pull-request comment ([`comment`]), Terraform's JSON output format
//! ([`terraform`]), what an apply did ([`report`]), and the saved plan `apply` reads back
//! ([`saved`]).
//!
//! Core makes plans and knows nothing of how they look; this crate knows nothing of AWS and
//! holds no logic a plan's making depends on. Every value it shows passes through core's
//! escapes (`reconcile_core::text`, `reconcile_core::markdown`), which the resource crates use
//! for what they write themselves.

pub mod comment;
pub mod plan;
pub mod report;
pub mod saved;
pub mod terraform;

#[cfg(test)]
mod snapshots_tests;
